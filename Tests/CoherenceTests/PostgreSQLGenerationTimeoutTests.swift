import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A read of a pinned query generation that the server ends with `statement_timeout`.
@Suite struct PostgreSQLGenerationTimeoutTests {
    /// The read fails with `.timeout`; the generation keeps its snapshot: the context's next
    /// reads see what they saw before, not what committed since.
    @Test(.postgreSQLServer, .timeLimit(.minutes(2)))
    func aTimedOutReadKeepsTheGeneration() throws {
        let dir = try TemporaryDirectory()
        let tests = PostgreSQLConnectionTests()
        _ = try tests.open(try tests.storeURL(dir).url)  // made without the timeout
        let (url, schema) = try tests.storeURL(dir, ["statement_timeout": "300ms"])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try PostgreSQLSnapshotTests.insert("Ada", writer)
        let pinned = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try pinned.performAndWait { try pinned.setQueryGeneration(from: .current) }
        #expect(try PostgreSQLSnapshotTests.names(pinned) == ["Ada"])
        try PostgreSQLSnapshotTests.insert("Bob", writer)

        // Another client locks the towns' table, which the generation has not read yet.
        let locker = try PostgreSQLTestServer.connection()
        let table = try locker.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND lower(tablename) = 'town'", [.text(schema)])
        guard case .text(let name)? = table.rows.first?.first else { throw CoherenceError(.invalidRequest, "No town table.") }
        let q = SQLDialect.postgreSQL
        try locker.execute("BEGIN")
        try locker.execute("LOCK TABLE \(q.quote(schema)).\(q.quote(name)) IN ACCESS EXCLUSIVE MODE")
        let error = #expect(throws: CoherenceError.self) {
            try pinned.performAndWait { try pinned.fetch(FetchRequest<Town>()).count }
        }
        #expect(error?.code == .timeout)
        try locker.execute("ROLLBACK")

        #expect(try PostgreSQLSnapshotTests.names(pinned) == ["Ada"])
        #expect(try pinned.performAndWait { try pinned.fetch(FetchRequest<Town>()).count } == 0)
    }
}
