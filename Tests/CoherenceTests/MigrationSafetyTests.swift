import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A migration is all or nothing: a process killed (SIGKILL) at any step of it leaves a store
/// that opens at its old version, with all its rows; one that finished leaves the new version.
@Suite("Migrations: safety", .timeLimit(.minutes(2)))
struct MigrationSafetyTests {
    static let rows = 3_000

    /// A store of `rows` RemoteNotes at the first version.
    static func makeStore(_ url: URL) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for i in 0..<rows {
                let note = RemoteNote(context: context)
                note.author = "a"
                note.sequence = i
                note.text = "note \(i)"
            }
            try context.save()
        }
        try coordinator.remove(store)
    }

    /// The texts of the notes, read at the first version.
    static func textsAtFirstVersion(_ url: URL) throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(migratesAutomatically: false))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try context.performAndWait { () throws -> [String] in
            try context.fetch(FetchRequest<RemoteNote>()).sorted { $0.sequence < $1.sequence }.map(\.text)
        }
    }

    @Test(arguments: ["rename", "copy RemoteNote", "indexes", "drop"])
    func aMigrationKilledAtAnyStepLeavesTheOldVersion(_ step: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        try Self.makeStore(url)
        let writer = try WriterProcess(store: url, author: "migrator", ["--migrate-stop-at", step])
        #expect(await writer.waitForLine("MIGRATING \(step)"))
        await writer.kill()
        let texts = try Self.textsAtFirstVersion(url)
        #expect(texts.count == Self.rows)
        #expect(texts.first == "note 0" && texts.last == "note \(Self.rows - 1)")
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        #expect(try ManagedObjectModel(types: [RemoteNote.self]).isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    @Test func aMigrationThatFinishedLeavesTheNewVersion() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        try Self.makeStore(url)
        let writer = try WriterProcess(store: url, author: "migrator", ["--migrate-stop-at", "none"])
        #expect(await writer.waitForLine("MIGRATED"))
        #expect(await writer.finish().status == 0)
        let error = #expect(throws: CoherenceError.self) { try Self.textsAtFirstVersion(url) }
        #expect(error?.code == .storeIncompatible)
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        let bodies = try c.prepare("SELECT count(*) FROM RemoteNote WHERE body LIKE 'note %'").rows { $0.int64(0) }
        #expect(bodies == [Int64(Self.rows)])
    }

    /// A staged migration with handlers (two custom stages, see the writer's Migrations.swift)
    /// killed anywhere: between its stages, inside a handler, inside a stage's inferred
    /// migration, or with every stage done just before the migrated copy takes the store's place.
    @Test(arguments: ["stage drop text", "handler", "copy RemoteNote", "replace"])
    func aStagedMigrationKilledAnywhereLeavesTheOldVersion(_ point: String) async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        try Self.makeStore(url)
        let writer = try WriterProcess(store: url, author: "migrator", ["--staged-stop-at", point])
        #expect(await writer.waitForLine("MIGRATING \(point)"))
        await writer.kill()
        let texts = try Self.textsAtFirstVersion(url)
        #expect(texts.count == Self.rows)
        #expect(texts.first == "note 0" && texts.last == "note \(Self.rows - 1)")
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        #expect(try ManagedObjectModel(types: [RemoteNote.self]).isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))

        // Run again to the end: the copy the killed process left is replaced, and none is left.
        let again = try WriterProcess(store: url, author: "migrator", ["--staged-stop-at", "none"])
        #expect(await again.waitForLine("MIGRATED"))
        #expect(await again.finish().status == 0)
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        let migrated = try c.prepare("SELECT count(*) FROM RemoteNote WHERE body LIKE 'NOTE %' AND author = 'migrated'").rows {
            $0.int64(0)
        }
        #expect(migrated == [Int64(Self.rows)])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).allSatisfy { !$0.contains("migrating") })
    }
}
