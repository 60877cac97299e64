import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Another program holding a lock on the history tables of a PostgreSQL store whose URL sets
/// `lock_timeout`: saves, batch requests, history deletes and the history kit's progress fail
/// with `.timeout`, change nothing, and work again once the lock is gone.
@Suite("PostgreSQL: history tables locked by another program", .postgreSQLServer, .serialized, .timeLimit(.minutes(3)))
struct PostgreSQLHistoryLockTests {
    /// A second connection holding `FOR UPDATE` locks on the rows of `table` (in `schema`)
    /// that `condition` selects, until it rolls back.
    static func lockRows(_ schema: String, _ table: String, where condition: String = "true") throws -> PostgreSQLConnection {
        let locker = try PostgreSQLTestServer.connection()
        try locker.execute("BEGIN")
        try locker.execute("SELECT 1 FROM \(SQLDialect.postgreSQL.quote(schema)).\(table) WHERE \(condition) FOR UPDATE")
        return locker
    }

    @Test func savesBatchesAndDeletesWaitingForTheHistoryStateTimeOut() throws {
        let dir = try TemporaryDirectory()
        let (url, schema) = try PostgreSQLConnectionTests().storeURL(dir, ["lock_timeout": "200ms"])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: kitStoreOptions)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        context.transactionAuthor = "app"
        func insert(_ n: Int) -> CoherenceError? {
            context.performAndWait { () -> CoherenceError? in
                let note = RemoteNote(context: context)
                note.author = "app"
                note.sequence = n
                do throws(CoherenceError) { try context.save() } catch { return error }
                return nil
            }
        }
        #expect(insert(1) == nil)
        let before = try PostgreSQLTestServer.dump(schema: schema)

        let locker = try Self.lockRows(schema, "z_historystate")
        #expect(insert(2)?.code == .timeout)
        let batch = #expect(throws: CoherenceError.self) {
            try context.performAndWait {
                try context.execute(BatchInsertRequest<RemoteNote>(objects: [["author": "batch", "sequence": 1, "text": "b"]]))
            }
        }
        #expect(batch?.code == .timeout)
        let delete = #expect(throws: CoherenceError.self) {
            try coordinator.execute(.deleteHistory(before: Date.distantFuture))
        }
        #expect(delete?.code == .timeout)
        #expect(try PostgreSQLTestServer.dump(schema: schema) == before)
        try locker.execute("ROLLBACK")

        // The failed save's object is still to save; numbering goes on without a gap.
        #expect(context.performAndWait { context.insertedObjects.count } == 1)
        #expect(
            context.performAndWait { () -> CoherenceError? in
                do throws(CoherenceError) { try context.save() } catch { return error }
                return nil
            } == nil)
        let numbers = try coordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?)).transactions.map(\.transactionNumber)
        #expect(numbers == [1, 2])
    }

    /// The kit's progress record waiting for a lock times out: the round records nothing and
    /// says so; the next round merges the same transactions again (harmless) with the later
    /// ones, and records its progress.
    @Test func aKitWhoseProgressIsLockedMergesAgainLater() async throws {
        let dir = try TemporaryDirectory()
        let widget = try KitStack(dir, author: "widget", type: .postgreSQL)
        let notes = try #require(widget.configuration.location)
        let schema = PostgreSQLTestServer.schema(of: notes)
        var components = try #require(URLComponents(url: notes, resolvingAgainstBaseURL: false))
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "lock_timeout", value: "200ms")]
        let url = try #require(components.url)
        let appConnect = GenericConnect<ContextStrategy.Direct>(
            name: "Notes", managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        try appConnect.attachPersistentStore(
            at: dir.url, for: StoreConfiguration(type: .postgreSQL, location: url, options: kitStoreOptions))
        appConnect.viewContext.transactionAuthor = "app"
        let kit = PersistentHistoryTrackingKit(
            container: appConnect, currentAuthor: "app", allAuthors: ["app", "widget"], cleanStrategy: .none, logLevel: 0)
        defer { kit.stop() }
        let merged = LockedValue<[Int64]>([])
        await kit.registerMergeHook { input in
            merged.withLock { $0 += input.transactions.map(\.transactionNumber) }
            return .goOn
        }
        let rounds = RoundReader(kit.engine)
        try widget.insert(1)
        let first = try widget.lastNumber()
        #expect(await rounds.through(first) != nil)
        #expect(try widget.progress()["app"] == first)

        let locker = try Self.lockRows(schema, "z_historyprogress", where: "z_author = 'app'")
        try widget.insert(2)
        let second = try widget.lastNumber()
        let aborted = await rounds.next { $0.aborted }
        #expect(aborted != nil)
        #expect(try widget.progress()["app"] == first)
        try locker.execute("ROLLBACK")

        try widget.insert(3)
        let third = try widget.lastNumber()
        #expect(await rounds.through(third) != nil)
        #expect(try widget.progress()["app"] == third)
        #expect(merged.withLock { $0 } == [first, second, second, third])
    }
}
