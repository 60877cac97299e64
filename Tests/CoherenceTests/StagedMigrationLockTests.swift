import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// One staged migration of a SQLite store runs at a time, but a migration does not wait for
/// itself: a stage handler that migrates another store of the same directory finishes (the
/// directory's lock is this process's already), and so do two threads migrating two stores of
/// one directory at once.
@Suite("Migrations: staged, several stores of one directory", .timeLimit(.minutes(2)))
struct StagedMigrationLockTests {
    static func fullManager() throws -> StagedMigrationManager {
        StagedMigrationManager([
            try StagedMigrationTests.decodeStage(),
            LightweightMigrationStage([try StagedMigrationTests.v2(), try StagedMigrationTests.v3()])
        ])
    }

    static func names(_ url: URL) throws -> [String] {
        try withMigrationStore(try StagedMigrationTests.v3(), at: url, options: StoreOptions(migratesAutomatically: false)) { context in
            try fetchByName(context, "Student").map(\.nameValue)
        }
    }

    @Test func aStageHandlerMigratesAnotherStoreOfTheDirectory() throws {
        let dir = try TemporaryDirectory()
        let first = dir.file("first.sqlite"), second = dir.file("second.sqlite")
        try StagedMigrationTests.makeStore(first)
        try StagedMigrationTests.makeStore(second)
        var stage = try StagedMigrationTests.decodeStage()
        let decode = try #require(stage.didMigrateHandler)
        let inner = try Self.fullManager()
        stage.didMigrateHandler = { context in
            try decode(context)
            // The other store, migrated from inside this migration.
            try withMigrationStore(try StagedMigrationTests.v3(), at: second, options: StoreOptions(stagedMigrationManager: inner)) { _ in }
        }
        let outer = StagedMigrationManager([
            stage, LightweightMigrationStage([try StagedMigrationTests.v2(), try StagedMigrationTests.v3()])
        ])
        try withMigrationStore(try StagedMigrationTests.v3(), at: first, options: StoreOptions(stagedMigrationManager: outer)) { _ in }
        #expect(try Self.names(first) == ["Ann", "Ben"])
        #expect(try Self.names(second) == ["Ann", "Ben"])
        #expect(try !migrationCopyLeft(first, in: dir))
    }

    @Test func twoThreadsMigrateTwoStoresOfOneDirectory() throws {
        let dir = try TemporaryDirectory()
        let urls = [dir.file("a.sqlite"), dir.file("b.sqlite"), dir.file("c.sqlite")]
        for url in urls { try StagedMigrationTests.makeStore(url) }
        let failures = LockedValue<[String]>([])
        DispatchQueue.concurrentPerform(iterations: urls.count * 2) { i in
            // Each store twice: the second migration of a store waits and finds it migrated.
            do {
                try withMigrationStore(
                    try StagedMigrationTests.v3(), at: urls[i % urls.count],
                    options: StoreOptions(stagedMigrationManager: try Self.fullManager())
                ) { _ in }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        for url in urls { #expect(try Self.names(url) == ["Ann", "Ben"]) }
        #expect(try !migrationCopyLeft(urls[0], in: dir))
    }
}
