import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A SQLite store's file replaced by another program while a coordinator has it open (a backup
/// restored by renaming a copy over it: a new file at the same path). The coordinator's
/// connections still hold the old file, so a save went there, or into the old write-ahead log
/// still at the path, and "succeeded": lost, or laid over the new file. Saves now find the file
/// moved and fail with a typed error, writing nothing; adding the store again saves into the new
/// file.
@Suite struct ReplacedStoreFileTests {
    private static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
    }

    private static func townNames(at url: URL) throws -> Set<String> {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        defer { try? coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return Set(try context.performAndWait { try context.fetch(FetchRequest<Town>()).map(\.name) })
    }

    /// `removingLog`: the other program also deletes the old `-wal` and `-shm` files.
    @Test(arguments: [false, true])
    func aSaveToAFileReplacedWhileOpenIsATypedError(_ removingLog: Bool) throws {
        let dir = try TemporaryDirectory("replaced-file-\(removingLog)")
        let url = dir.file("store.sqlite"), copy = dir.file("copy.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            Town(context: context).name = "before"
            try context.save()
        }
        // The other program: a copy with one more town, renamed over the store.
        try runForeignSQL("VACUUM INTO '\(copy.path)'", at: url.path)
        try runForeignSQL(
            "PRAGMA journal_mode = DELETE; INSERT INTO Town (Z_PK, Z_ENT, Z_OPT, name, population) "
                + "SELECT max(Z_PK) + 1, Z_ENT, 1, 'restored', 0 FROM Town", at: copy.path)
        if removingLog {
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        }
        try #require(rename(copy.path, url.path) == 0)

        let error = context.performAndWait { () -> CoherenceError? in
            Town(context: context).name = "after"
            do {
                try context.save()
                return nil
            } catch {
                return error as? CoherenceError
            }
        }
        #expect(error?.code == .storeIncompatible, "\(String(describing: error))")
        // Another coordinator on the new file (its log is new too when the old one was deleted)
        // keeps its save when the first one lets the old file go.
        let other = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        if removingLog {
            try other.addPersistentStore(type: .sqlite, at: url)
            let otherContext = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: other)
            try otherContext.performAndWait {
                Town(context: otherContext).name = "other"
                try otherContext.save()
            }
        }
        // Added again, the store saves into the new file.
        try coordinator.remove(store)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let again = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try again.performAndWait {
            Town(context: again).name = "again"
            try again.save()
        }
        let names = try Self.townNames(at: url)
        #expect(!names.contains("after"))
        #expect(names.contains("again"))
        if removingLog { #expect(names == ["before", "restored", "other", "again"]) }
    }
}
