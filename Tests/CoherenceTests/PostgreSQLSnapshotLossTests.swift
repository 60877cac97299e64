import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A pinned query generation whose snapshot connection the server ended: reads of the
/// generation fail with typed errors (never rows of another snapshot), and the context reads
/// again once it takes another generation.
@Suite struct PostgreSQLSnapshotLossTests {
    @Test(.postgreSQLServer, .timeLimit(.minutes(2)))
    func aGenerationWhoseConnectionWasKilledFailsTypedAndCanBeReplaced() throws {
        let dir = try TemporaryDirectory()
        let (url, schema) = try PostgreSQLConnectionTests().storeURL(dir, [:])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try PostgreSQLSnapshotTests.insert("Ada", writer)
        let pinned = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try pinned.performAndWait { try pinned.setQueryGeneration(from: .current) }
        #expect(try PostgreSQLSnapshotTests.names(pinned) == ["Ada"])
        try PostgreSQLSnapshotTests.insert("Bob", writer)

        let ended = try PostgreSQLTestServer.connection().execute(
            "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'",
            [.text(schema)])
        #expect(ended.firstInteger == 1)
        for _ in 0..<2 {
            let error = #expect(throws: CoherenceError.self) { try PostgreSQLSnapshotTests.names(pinned) }
            #expect([.connectionLost, .storeReadFailed, .invalidQueryGenerationToken].contains(error?.code), "\(String(describing: error))")
        }
        try pinned.performAndWait { try pinned.setQueryGeneration(from: .current) }
        #expect(try PostgreSQLSnapshotTests.names(pinned) == ["Ada", "Bob"])
        try PostgreSQLSnapshotTests.insert("Cy", writer)
        #expect(try PostgreSQLSnapshotTests.names(pinned) == ["Ada", "Bob"])
        try pinned.performAndWait { try pinned.setQueryGeneration(from: nil) }
        #expect(try PostgreSQLSnapshotTests.names(pinned) == ["Ada", "Bob", "Cy"])
    }
}
