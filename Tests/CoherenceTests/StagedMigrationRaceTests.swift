import Foundation
import Testing
@testable import Coherence
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Two processes running the same staged migration of one SQLite store at once (both work on
/// `<store>-migrating`): the store ends migrated once with every row, or at its old version with
/// every row, never empty or half migrated; a process that does not migrate it fails with a
/// typed error.
@Suite("Migrations: two staged migrations at once", .timeLimit(.minutes(5)))
struct StagedMigrationRaceTests {
    /// The store's RemoteNote columns and rows, read with plain SQL.
    private static func state(_ url: URL) throws -> (columns: Set<String>, rows: Int64, migrated: Int64) {
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        let columns = Set(try c.prepare("SELECT name FROM pragma_table_info('RemoteNote')").rows { $0.string(0) })
        let rows = try c.prepare("SELECT count(*) FROM RemoteNote").rows { $0.int64(0) }.first ?? -1
        let migrated =
            columns.contains("body")
            ? try c.prepare("SELECT count(*) FROM RemoteNote WHERE body LIKE 'NOTE %' AND author = 'migrated'").rows { $0.int64(0) }.first
                ?? -1 : 0
        return (columns, rows, migrated)
    }

    @Test func aSecondStagedMigrationStartedMeanwhileLeavesOneWholeResult() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        try MigrationSafetyTests.makeStore(url)
        let first = try WriterProcess(store: url, author: "first", ["--staged-pause-at", "handler"])
        #expect(await first.waitForLine("MIGRATING handler"))
        // The second waits for the first (it used to delete the first's copy and run on).
        let second = try WriterProcess(store: url, author: "second", ["--staged-stop-at", "none"])
        let line = await second.nextLine()
        #expect(line == "WAITING")
        first.send()
        let firstOutcome = await first.finish()
        let secondOutcome = await second.finish()
        let rows = Int64(MigrationSafetyTests.rows)
        let state = try Self.state(url)
        #expect(state.rows == rows, "first: \(firstOutcome), second: \(secondOutcome)")
        if state.columns.contains("body") {
            #expect(state.columns == ["Z_PK", "Z_ENT", "Z_OPT", "author", "sequence", "body"])
            #expect(state.migrated == rows)
        } else {
            #expect(state.columns == ["Z_PK", "Z_ENT", "Z_OPT", "author", "sequence", "text"])
        }
        for outcome in [firstOutcome, secondOutcome] where outcome.status != 0 {
            #expect(outcome.errors.contains("migrationFailed") || outcome.errors.contains("Migrat"), "\(outcome.errors)")
        }
        #expect(firstOutcome.status == 0 && secondOutcome.status == 0, "first: \(firstOutcome), second: \(secondOutcome)")
        #expect(state.migrated == rows)
    }
}
