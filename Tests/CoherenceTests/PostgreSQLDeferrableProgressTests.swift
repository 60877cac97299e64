import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The history kits' progress table (`Z_HISTORYPROGRESS`) of a PostgreSQL store whose key
/// another program made `DEFERRABLE INITIALLY DEFERRED`: PostgreSQL refuses the progress
/// upsert's `INSERT … ON CONFLICT` there (SQLSTATE 55000).
@Suite("PostgreSQL: a deferrable key on the history progress table", .postgreSQLServer, .serialized, .timeLimit(.minutes(5)))
struct PostgreSQLDeferrableProgressTests {
    /// Replaces the progress table's primary key by a deferrable one, as another program would.
    static func makeProgressKeyDeferrable(_ stack: KitStack) throws {
        let location = try #require(stack.configuration.location)
        let table = SQLDialect.postgreSQL.quote(PostgreSQLTestServer.schema(of: location)) + ".z_historyprogress"
        try PostgreSQLTestServer.connection().execute(
            "ALTER TABLE \(table) DROP CONSTRAINT z_historyprogress_pkey, "
                + "ADD CONSTRAINT outside_progress_key PRIMARY KEY (z_author) DEFERRABLE INITIALLY DEFERRED")
    }

    /// A kit still records its author's progress: as it starts (so that the other kits'
    /// cleaning waits for it) and after each merge (so that nothing is merged twice); progress
    /// still only moves forward.
    @Test func aKitRecordsProgressInATableWithADeferrableKey() async throws {
        let (app, widget) = try kitPair(.postgreSQL)
        try widget.insert(1)
        let widgetKit = widget.kit()
        defer { widgetKit.stop() }
        try Self.makeProgressKeyDeferrable(app)
        // Recorded again for an author that has progress (an update), and for a new one.
        try widget.coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: try widget.lastNumber(), timestamp: Date(), updated: Date()), author: "widget",
            in: widget.store)
        let kit = app.kit()
        defer { kit.stop() }
        #expect(try app.progress()["app"] == 0)
        let merges = LockedValue<[Int64]>([])
        await kit.registerMergeHook { input in
            merges.withLock { $0 += input.transactions.map(\.transactionNumber) }
            return .goOn
        }
        #expect(await kit.mergePendingHistory() == 1)
        let first = try widget.lastNumber()
        #expect(try app.progress()["app"] == first)
        #expect(await kit.mergePendingHistory() == 0)
        #expect(merges.withLock { $0 } == [first])
        // Forward only.
        try app.coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: 0, timestamp: Date(), updated: Date()), author: "app", in: app.store)
        #expect(try app.progress()["app"] == first)
        // A coordinator that opens the store afterwards finds the deferrable key as it opens.
        let late = try KitStack(app.directory, author: "extension", type: .postgreSQL)
        try late.coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: first, timestamp: Date(), updated: Date()), author: "extension", in: late.store)
        #expect(try late.progress() == ["app": first, "widget": first, "extension": first])
    }
}
