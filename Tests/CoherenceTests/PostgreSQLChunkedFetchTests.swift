import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Fetches expected to return many rows read through a cursor, in chunks fetched ahead in one
/// pipeline: the same objects as one statement, from one snapshot (a pinned query generation's
/// too), and a failure part-way leaves nothing registered and no transaction open.
@Suite(.serialized) struct PostgreSQLChunkedFetchTests {
    /// A store whose fetches of at least 10 rows read in chunks of 7, with `count` people
    /// (ages 0..<count), and the chunk sizes its cursor fetches saw (recorded by the hook).
    final class Fixture: @unchecked Sendable {
        // @unchecked Sendable: set up once; `chunks` is locked.
        let coordinator: PersistentStoreCoordinator
        let engine: PostgreSQLStore
        let schema: String
        let chunks = LockedValue<[Int]>([])
        /// The chunk (counted from 1) at which the hook throws, if any.
        let failAt = LockedValue<Int?>(nil)

        init(_ dir: TemporaryDirectory, count: Int) throws {
            let (url, schema) = try PostgreSQLConnectionTests().storeURL(dir)
            self.schema = schema
            coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
            let store = try coordinator.addPersistentStore(type: .postgreSQL, at: url)
            engine = try #require(store.engine as? PostgreSQLStore)
            engine.chunking.withLock { $0 = (minimumRows: 10, chunkSize: 7) }
            let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try writer.performAndWait {
                for i in 0..<count {
                    let p = Person(context: writer)
                    p.name = "P\(i)"
                    p.age = i
                }
                try writer.save()
            }
        }

        /// Records the chunks of this store's cursor fetches (and throws at `failAt`).
        func hook(_ location: String, _ rows: Int) throws {
            guard location == engine.locationDescription else { return }
            let n = chunks.withLock { c -> Int in
                c.append(rows)
                return c.count
            }
            if failAt.withLock({ $0 }) == n { throw CoherenceError(.storeReadFailed, "Failed on purpose in chunk \(n).") }
        }

        /// The people's ages in key order, as `context` fetches them.
        func ages(_ context: ManagedObjectContext) throws -> [Int] {
            try context.performAndWait { try context.fetch(FetchRequest<Person>()).map(\.age) }
        }

        /// How many transactions of this store's connections are open and idle.
        func openTransactions() throws -> Int64? {
            try PostgreSQLTestServer.connection().execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'",
                [.text(schema)]
            ).firstInteger
        }
    }

    @Test(.postgreSQLServer, arguments: [false, true])
    func aLargeFetchReadsInChunksTheRowsOfOneStatement(pinned: Bool) throws {
        let dir = try TemporaryDirectory()
        let f = try Fixture(dir, count: 40)
        PostgreSQLStore.chunkHook = f.hook
        defer { PostgreSQLStore.chunkHook = nil }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        if pinned { try context.performAndWait { try context.setQueryGeneration(from: .current) } }

        // The first run learns the row count (one statement); the next runs read in chunks.
        #expect(try f.ages(context) == Array(0..<40))
        #expect(f.chunks.withLock { $0 }.isEmpty)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        try writer.performAndWait {
            Person(context: writer).age = 40
            try writer.save()
        }
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        if pinned {
            try fresh.performAndWait { try fresh.setQueryGeneration(from: context.performAndWait { context.queryGenerationToken }) }
        }
        let expected = pinned ? Array(0..<40) : Array(0...40)
        #expect(try f.ages(fresh) == expected)
        // 40 expected rows: 40 / 7 = 5 chunks sent ahead (4 of 7 rows, then the rest).
        #expect(f.chunks.withLock { $0 } == (pinned ? [7, 7, 7, 7, 12] : [7, 7, 7, 7, 13]))
        // Again on the same connections: the cursor was closed (or its transaction ended).
        #expect(try f.ages(fresh) == expected)
        #expect(f.chunks.withLock { $0 }.count == 10)
        if pinned {
            try context.performAndWait { try context.setQueryGeneration(from: nil) }
            try fresh.performAndWait { try fresh.setQueryGeneration(from: nil) }
        }
        #expect(try f.openTransactions() == 0)
    }

    @Test(.postgreSQLServer, arguments: [false, true])
    func aFailurePartWayThroughTheChunksRegistersNothing(pinned: Bool) throws {
        let dir = try TemporaryDirectory()
        let f = try Fixture(dir, count: 30)
        PostgreSQLStore.chunkHook = f.hook
        defer { PostgreSQLStore.chunkHook = nil }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        if pinned { try context.performAndWait { try context.setQueryGeneration(from: .current) } }
        #expect(try f.ages(context) == Array(0..<30))
        context.performAndWait { context.reset() }

        f.failAt.withLock { $0 = 2 }
        let error = #expect(throws: CoherenceError.self) { try f.ages(context) }
        #expect(error?.message.contains("Failed on purpose in chunk 2") == true)
        #expect(context.performAndWait { context.registeredObjects.isEmpty })
        if !pinned { #expect(try f.openTransactions() == 0) }

        // The next fetch reads every row again.
        f.failAt.withLock { $0 = nil }
        #expect(try f.ages(context) == Array(0..<30))
        #expect(context.performAndWait { context.registeredObjects.count } == 30)
        if pinned { try context.performAndWait { try context.setQueryGeneration(from: nil) } }
        #expect(try f.openTransactions() == 0)
    }

    @Test(.postgreSQLServer)
    func aServerErrorInALaterChunkIsTypedAndLeavesTheConnectionUsable() throws {
        let c = try PostgreSQLTestServer.connection()
        var seen: [Int] = []
        let sql = "SELECT 10 / (i - $1) FROM generate_series(1, 30) AS i"
        let error = #expect(throws: PostgreSQLError.self) {
            try c.query(sql, [.integer(20)], chunkSize: 7, chunks: 4) { rows in seen.append(rows.count) }
        }
        #expect(error?.sqlState == "22012")
        #expect(error?.sql?.contains("generate_series") == true)
        #expect(seen == [7, 7])
        #expect(!c.isInTransaction)
        var all: [StoredValue] = []
        try c.query(sql, [.integer(100)], chunkSize: 7, chunks: 4) { rows in
            for r in 0..<Int32(rows.count) { all.append(rows.value(r, 0)) }
        }
        #expect(all == (1...30).map { .integer(Int64(10 / ($0 - 100))) })
    }
}
