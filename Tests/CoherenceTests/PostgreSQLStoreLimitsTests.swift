import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// What a PostgreSQL store keeps does not grow with its callers' input.
@Suite struct PostgreSQLStoreLimitsTests {
    /// Every distinct SQL text (a fetch with a predicate of another shape makes one) passes
    /// through the store's cache of numbered texts: the cache stays bounded, and every text comes
    /// back numbered right, whether it was kept or not.
    @Test(.postgreSQLServer) func numberedSQLCacheIsBounded() throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let attached = try coordinator.addPersistentStore(type: .postgreSQL, at: try dir.postgreSQLURL())
        let store = try #require(attached.engine as? PostgreSQLStore)
        let texts = PostgreSQLStore.numberedLimit * 4
        var wrong = 0, most = 0
        for i in 0..<texts {
            if store.numbered("SELECT ? + \(i), ?") != "SELECT $1 + \(i), $2" { wrong += 1 }
            most = max(most, store.numberedCount)
        }
        #expect(wrong == 0)
        #expect(most <= PostgreSQLStore.numberedLimit)
        // A text asked again after the cache started over is still right.
        #expect(store.numbered("SELECT ? + 0, ?") == "SELECT $1 + 0, $2")
        #expect(store.numberedCount <= PostgreSQLStore.numberedLimit)
        try coordinator.remove(attached)
    }
}
