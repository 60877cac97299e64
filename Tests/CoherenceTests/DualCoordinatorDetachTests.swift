import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Detaching a store from a container with the dual-coordinator strategy closes the writer
// coordinator's copy at once: importer contexts made before the detach no longer read or write
// it, and a file deleted and made again at the same path takes the imports that follow.

/// The files under `directory` this process holds open (read from /proc/self/fd).
private func filesOpen(under directory: URL) -> [String] {
    let fdDirectory = "/proc/self/fd"
    let prefix = directory.resolvingSymlinksInPath().path + "/"
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + $0) }
        .filter { $0.hasPrefix(prefix) }
}

/// The towns stored in a SQLite file, read through a coordinator of their own.
private func townsInFile(_ url: URL) throws -> [String] {
    let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
    let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
    defer { try? coordinator.remove(store) }
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    return try context.performAndWait { try context.fetch(FetchRequest<Town>()).map(\.name).sorted() }
}

@Suite("Dual coordinator: detaching a store", .timeLimit(.minutes(3)))
struct DualCoordinatorDetachTests {
    func connect(_ dir: TemporaryDirectory) throws -> GenericConnect<ContextStrategy.DualCoordinator> {
        let connect = GenericConnect<ContextStrategy.DualCoordinator>(
            name: "Dual", managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
        connect.storeLocation = dir.url
        try connect.attachPersistentStore(for: StoreConfiguration(fileName: "global.sqlite"))
        try connect.start()
        return connect
    }

    /// User A logs out while an importer context made before holds an unsaved object of A's
    /// store: the file is closed when the detach returns, the importer's save throws a typed
    /// error, it no longer reads A's objects, and A's file keeps what was saved before.
    @Test func anImporterMadeBeforeTheDetachNeitherWritesNorReadsTheDetachedStore() async throws {
        let dir = try TemporaryDirectory()
        let connect = try connect(dir)
        let alice = try connect.attachPersistentStore(at: dir.file("alice"), for: StoreConfiguration(fileName: "user.sqlite"))
        let importer = connect.strategy.importerContext()
        try await importer.perform {
            let saved = Town(context: importer)
            saved.name = "Oslo"
            try importer.assign(saved, to: try #require(importer.persistentStoreCoordinator.persistentStore(for: alice.url!)))
            try importer.save()
            let unsaved = Town(context: importer)
            unsaved.name = "Bergen"
            try importer.assign(unsaved, to: try #require(importer.persistentStoreCoordinator.persistentStore(for: alice.url!)))
        }
        try connect.detach(persistentStore: alice)
        #expect(filesOpen(under: dir.file("alice")).isEmpty)
        let code: CoherenceError.Code? = await importer.perform {
            do throws(CoherenceError) {
                try importer.save()
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code == .storeNotAttached)
        let seen: [String] = try await importer.perform {
            importer.rollback()
            return try importer.fetch(FetchRequest<Town>()).map(\.name)
        }
        #expect(seen.isEmpty)  // only the global store is attached, and it holds no town
        #expect(try townsInFile(dir.file("alice/user.sqlite")) == ["Oslo"])
        try connect.stop()
    }

    /// A store detached, its files deleted and a new store attached at the same path: imports
    /// go to the new file (the writer coordinator had kept the deleted one open and wrote
    /// there, where nobody would ever read them).
    @Test func aStoreMadeAgainAtTheSamePathTakesTheImports() async throws {
        let dir = try TemporaryDirectory()
        let connect = try connect(dir)
        let location = dir.file("alice")
        let first = try connect.attachPersistentStore(at: location, for: StoreConfiguration(fileName: "user.sqlite"))
        try await savePeople(["Ann"], through: connect.strategy.importerContext(), into: first)
        try connect.detach(persistentStore: first)
        let file = location.appendingPathComponent("user.sqlite")
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: file.path + suffix) {
            try FileManager.default.removeItem(atPath: file.path + suffix)
        }
        let fresh = try connect.attachPersistentStore(at: location, for: StoreConfiguration(fileName: "user.sqlite"))
        try await savePeople(["Bob"], through: connect.strategy.importerContext(), into: fresh)
        let view = connect.viewContext
        let shown = try await view.perform { try view.fetch(FetchRequest<Town>()).map(\.name) }
        #expect(shown == ["Bob"])
        try connect.stop()
        #expect(try townsInFile(file) == ["Bob"])
    }

    /// Saves towns named `names` through `importer`, into the writer coordinator's copy of `store`.
    func savePeople(_ names: [String], through importer: ManagedObjectContext, into store: PersistentStore) async throws {
        try await importer.perform {
            let target = try #require(importer.persistentStoreCoordinator.persistentStore(withIdentifier: store.identifier))
            for name in names {
                let town = Town(context: importer)
                town.name = name
                try importer.assign(town, to: target)
            }
            try importer.save()
        }
    }
}
