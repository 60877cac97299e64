import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A SQLite store saved to by another coordinator (another process, at the old version) while a
/// staged migration works on its copy: the copy does not replace the store (that save was lost),
/// the migration fails with `migrationFailed`, the store keeps its version and the save, and the
/// next open migrates it with that save.
@Suite("Migrations: staged, with a save to the store meanwhile")
struct StagedMigrationConcurrentWriteTests {
    @Test func aSaveMadeDuringTheMigrationIsKept() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("students.sqlite")
        try StagedMigrationTests.makeStore(url)
        var stage = try StagedMigrationTests.decodeStage()
        let decode = stage.didMigrateHandler
        let saved = LockedValue(false)
        stage.didMigrateHandler = { context in
            try decode?(context)
            guard !saved.withLock({ $0 }) else { return }
            saved.withLock { $0 = true }
            // Another coordinator saves to the store, at version 1, and closes it.
            try withMigrationStore(try StagedMigrationTests.v1(), at: url, options: StoreOptions(migratesAutomatically: false)) { other in
                let payload = StagedMigrationTests.Payload(name: "Cat", age: 30)
                try insertObject(other, "Student", ["data": try JSONEncoder().encode(payload)])
                try other.save()
            }
        }
        let manager = StagedMigrationManager([
            stage, LightweightMigrationStage([try StagedMigrationTests.v2(), try StagedMigrationTests.v3()])
        ])
        let options = StoreOptions(stagedMigrationManager: manager)
        let error = #expect(throws: CoherenceError.self) {
            try withMigrationStore(try StagedMigrationTests.v3(), at: url, options: options) { _ in }
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.store == url.path)
        #expect(!FileManager.default.fileExists(atPath: MigrationCopy.location(of: url).path))
        // The store is at version 1 with the three students.
        #expect(try StagedMigrationTests.blobsAtFirstVersion(url).count == 3)
        // Opened again (nobody writes meanwhile), it migrates with them.
        let names = try withMigrationStore(try StagedMigrationTests.v3(), at: url, options: options) { context in
            try fetchByName(context, "Student").map { "\($0.nameValue) \((try? $0.value(forKey: "age")) as? Int ?? -1)" }
        }
        #expect(names == ["Ann 20", "Ben 22", "Cat 30"])
    }
}
