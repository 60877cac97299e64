import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A migration is all or nothing: a process killed (SIGKILL) at any step of it leaves a store
/// that opens at its old version, with all its rows; one that finished leaves the new version.
@Suite("Migrations: safety", .timeLimit(.minutes(10)))
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

    /// Makes a store, has the writer migrate it with `option` until it reaches `point`, kills it
    /// there, and checks that the store opens at the first version with every note.
    static func killMigration(at point: String, _ option: String, in dir: TemporaryDirectory) async throws -> URL {
        let url = dir.file("notes.sqlite")
        try makeStore(url)
        let writer = try WriterProcess(store: url, author: "migrator", [option, point])
        #expect(await writer.waitForLine("MIGRATING \(point)"))
        await writer.kill()
        let texts = try textsAtFirstVersion(url)
        #expect(texts.count == rows)
        #expect(texts.first == "note 0" && texts.last == "note \(rows - 1)")
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        #expect(try ManagedObjectModel(types: [RemoteNote.self]).isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        return url
    }

    @Test(arguments: ["rename", "copy RemoteNote", "indexes", "drop"])
    func aMigrationKilledAtAnyStepLeavesTheOldVersion(_ step: String) async throws {
        let dir = try TemporaryDirectory()
        _ = try await Self.killMigration(at: step, "--migrate-stop-at", in: dir)
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
        let url = try await Self.killMigration(at: point, "--staged-stop-at", in: dir)

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

    /// A store of `count` RemoteNotes at the first version, written with SQL in one transaction.
    static func makeLargeStore(_ url: URL, count: Int) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        try coordinator.remove(try coordinator.addPersistentStore(type: .sqlite, at: url))
        let c = try SQLiteConnection(location: .file(url.path))
        try c.writeTransaction {
            try c.execute(
                """
                WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < \(count))
                INSERT INTO RemoteNote (Z_PK, Z_ENT, Z_OPT, "author", "sequence", "text") SELECT i, 1, 1, 'a', i, 'note ' || i FROM k
                """)
            try c.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = \(count)")
        }
    }

    /// The rows of a store at the first version: it opens with that version, unmigrated, and
    /// SQL sums up its notes (count, sequences, texts).
    static func largeStoreAtFirstVersion(_ url: URL) throws -> [Int64] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(migratesAutomatically: false))
        let count = try coordinator.count(for: FetchRequest<RemoteNote>())
        try coordinator.remove(store)
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        let sums = try c.prepare(
            "SELECT count(*), sum(\"sequence\"), sum(\"text\" = 'note ' || \"sequence\") FROM RemoteNote"
        ).rows { [$0.int64(0), $0.int64(1), $0.int64(2)] }
        return [Int64(count)] + (sums.first ?? [])
    }

    /// A migration of 1,000,000 rows (a table rebuild) killed after 1, about 400,000 and about
    /// 900,000 rows were copied: the child process reports the rows copied through its standard
    /// output and stops there until it is killed. Each time the store opens at its old version
    /// with every row; then the migration runs to its end, with its progress and log lines.
    @Test func aMigrationOfAMillionRowsKilledAtAnyPointLeavesEveryRow() async throws {
        let dir = try TemporaryDirectory()
        let rows = 1_000_000
        let template = dir.file("template.sqlite")
        try await offPool { try Self.makeLargeStore(template, count: rows) }
        // Objects counted through the coordinator, rows counted in SQL, the sum of the sequences,
        // the texts that match their sequence.
        let intact: [Int64] = [Int64(rows), Int64(rows), Int64(rows) * Int64(rows + 1) / 2, Int64(rows)]
        let found = try await offPool { try Self.largeStoreAtFirstVersion(template) }
        #expect(found == intact)
        for (i, limit) in [1, 400_000, 900_000].enumerated() {
            let url = dir.file("notes\(i).sqlite")
            try FileManager.default.copyItem(at: template, to: url)
            let writer = try WriterProcess(store: url, author: "migrator", ["--migrate-stop-after", "\(limit)"])
            var copied: Int64 = 0
            while copied < limit, let line = await writer.nextLine() {
                let parts = line.split(separator: " ")
                if parts.first == "PROGRESS", parts.count > 1 { copied = Int64(parts[1]) ?? 0 }
            }
            #expect(copied >= limit && copied < rows, "killed after \(copied) rows")
            await writer.kill()
            let left = try await offPool { try Self.largeStoreAtFirstVersion(url) }
            #expect(left == intact, "killed after \(copied) rows")
        }

        // The last copy, migrated to the end.
        let url = dir.file("notes2.sqlite")
        let writer = try WriterProcess(store: url, author: "migrator", ["--migrate-stop-after", "0"])
        var progress: [(completed: Int64, total: Int64, fraction: Double)] = []
        var logs: [String] = []
        var fraction: Double?
        while let line = await writer.nextLine(), line != "MIGRATED" {
            let parts = line.split(separator: " ").map(String.init)
            switch parts.first {
            case "PROGRESS" where parts.count == 4:
                progress.append((Int64(parts[1]) ?? -1, Int64(parts[2]) ?? -1, Double(parts[3]) ?? -1))
            case "LOG": logs.append(String(line.dropFirst(4)))
            case "FRACTION": fraction = parts.count == 2 ? Double(parts[1]) : nil
            default: break
            }
        }
        #expect(await writer.finish().status == 0)
        // Rows are the units: every run of rows moves the progress, up to every row.
        #expect(progress.count == (rows + InferredMigration.chunkRows - 1) / InferredMigration.chunkRows)
        #expect(progress.allSatisfy { $0.total == Int64(rows) })
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.completed < $1.completed })
        #expect(progress.last?.completed == Int64(rows))
        // The caller's progress follows (one unit, the migration's rows under it).
        #expect(progress.allSatisfy { abs($0.fraction - Double($0.completed) / Double(rows)) < 0.001 })
        #expect(fraction == 1)
        #expect(logs.contains { $0.hasPrefix("Copying the rows of RemoteNote into RemoteNote") && $0.contains(url.path) })
        #expect(logs.contains("Copied \(rows) rows into RemoteNote (\(url.path))"))
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        let bodies = try c.prepare("SELECT count(*) FROM RemoteNote WHERE body = 'note ' || \"sequence\"").rows { $0.int64(0) }
        #expect(bodies == [Int64(rows)])
    }
}
