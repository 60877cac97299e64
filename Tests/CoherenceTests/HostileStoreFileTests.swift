import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Store files another program damaged, and paths with unusual characters.
@Suite struct HostileStoreFileTests {
    /// A file of garbage, a store cut in half and a store whose header was overwritten are
    /// refused with `.storeOpenFailed` naming the store, and left byte for byte as they were.
    @Test(arguments: ["garbage", "truncated", "header"])
    func aDamagedFileIsATypedOpenErrorAndIsLeftAsItWas(_ damage: String) throws {
        let dir = try TemporaryDirectory("damaged-\(damage)")
        let url = dir.file("store.sqlite")
        if damage == "garbage" {
            try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: url)
        } else {
            let coordinator = try makeCoordinator(.sqlite, in: dir)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                for n in 0..<300 { Person(context: context).name = String(repeating: "x", count: 200) + "\(n)" }
                try context.save()
            }
            try coordinator.remove(try #require(coordinator.persistentStores.first))
            var bytes = try Data(contentsOf: url)
            if damage == "truncated" {
                bytes = bytes.prefix(bytes.count / 2)
            } else {
                bytes.replaceSubrange(0..<16, with: Data(repeating: 0x41, count: 16))
            }
            try bytes.write(to: url)
        }
        let before = try Data(contentsOf: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let error = #expect(throws: CoherenceError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error?.code == .storeOpenFailed, "\(String(describing: error))")
        #expect(error?.store == url.path)
        #expect(coordinator.persistentStores.isEmpty)
        #expect(try Data(contentsOf: url) == before)
    }

    /// A store path that names a directory is refused with `.storeOpenFailed` naming the store,
    /// and the directory and what it holds are left as they were.
    @Test func aPathThatIsADirectoryIsATypedOpenError() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.sqlite")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        try Data("kept".utf8).write(to: url.appendingPathComponent("inside.txt"))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let error = #expect(throws: CoherenceError.self) { try coordinator.addPersistentStore(type: .sqlite, at: url) }
        #expect(error?.code == .storeOpenFailed, "\(String(describing: error))")
        #expect(error?.store == url.path)
        #expect(coordinator.persistentStores.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.path) == ["inside.txt"])
        #expect(try Data(contentsOf: url.appendingPathComponent("inside.txt")) == Data("kept".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path) == ["store.sqlite"])
    }

    /// A store in a directory and file whose names hold spaces, `?`, `#`, `%` and non-ASCII
    /// letters opens, saves and opens again at the same path (SQLite opens with URI filenames
    /// enabled: the path must not be read as a URI).
    @Test func aPathWithUnusualCharactersHoldsAStore() throws {
        let dir = try TemporaryDirectory()
        let folder = dir.file("a b?#%20é")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("st ore?x=1#y%41ü.sqlite")
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                Person(context: context).name = "kept"
                try context.save()
            }
            try coordinator.remove(try #require(coordinator.persistentStores.first))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).contains("st ore?x=1#y%41ü.sqlite"))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let names = try context.fetch(FetchRequest<Person>()).map(\.name)
            #expect(names == ["kept"])
        }
    }
}
