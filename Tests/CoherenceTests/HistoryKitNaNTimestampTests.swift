import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Collects a history kit's log messages.
final class CollectingKitLogger: PersistentHistoryTrackingKitLoggerProtocol, Sendable {
    let messages = LockedValue<[String]>([])
    func log(type: PersistentHistoryTrackingKitLogType, message: String) { messages.withLock { $0.append(message) } }
}

/// History timestamps that are not a number (PostgreSQL's `DOUBLE PRECISION` holds NaN, which
/// another program may write): Foundation's description of such a date stops the process.
@Suite struct HistoryKitNaNTimestampTests {
    /// A kit logging details starts and merges from a transaction whose timestamp is NaN: its
    /// log messages described the progress it claimed, and the progress it merged to, with the
    /// timestamp's description, which stopped the process.
    @Test(.postgreSQLServer) func aKitLogsATransactionWhoseTimestampIsNotANumber() async throws {
        let (app, widget) = try kitPair(.postgreSQL)
        try widget.insert(1)
        let schema = PostgreSQLTestServer.schema(of: try #require(app.store.url))
        _ = try PostgreSQLTestServer.connection().execute("UPDATE \(schema).z_historytransaction SET z_timestamp = 'NaN'")
        let logger = CollectingKitLogger()
        let kit = PersistentHistoryTrackingKit(
            container: app.connect, currentAuthor: "app", allAuthors: ["app", "widget"], logger: logger, logLevel: 2)
        defer { kit.stop() }
        await kit.mergePendingHistory()
        let messages = logger.messages.withLock { $0 }
        #expect(messages.contains { $0.contains("claimed at transaction 0 of Date(timeIntervalSinceReferenceDate: nan)") }, "\(messages)")
        #expect(messages.contains { $0.contains("transaction 1 of Date(timeIntervalSinceReferenceDate: nan)") }, "\(messages)")
        #expect(try app.progress()["app"] == (try app.lastNumber()))
    }
}
