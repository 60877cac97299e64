import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Fault probes on persistent history, on PostgreSQL against the SQLite store's answers: history
/// requests on a store that does not track it, a connection lost during a history fetch, and
/// history deletes while another process writes.
@Suite struct PostgreSQLHistoryProbeTests {
    /// What each history request gives on a store opened without history tracking: the error
    /// code, or what it returned.
    static func untrackedAnswers(_ c: PersistentStoreCoordinator) throws -> [String] {
        let store = try #require(c.persistentStores.first)
        func code(_ body: () throws -> Any?) -> String {
            do {
                return "returned \(String(describing: try body()))"
            } catch let error as CoherenceError {
                return "\(error.code)"
            } catch {
                return "\(error)"
            }
        }
        let token = PersistentHistoryToken(storeIdentifier: store.identifier, transactionNumber: 1)
        var inStore = PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)
        inStore.affectedStores = [store]
        var count = PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)
        count.resultType = .count
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        return [
            code { try c.execute(.fetchHistory(after: nil as PersistentHistoryToken?)) },
            code { try c.execute(.fetchHistory(after: token)) },
            code { try c.execute(.fetchHistory(after: Date.distantPast)) },
            code { try c.execute(inStore) },
            code { try c.execute(count) },
            code { try c.execute(.deleteHistory(before: nil as PersistentHistoryToken?)) },
            code { try c.execute(.deleteHistory(before: token)) },
            code { try context.performAndWait { try context.execute(.fetchHistory(after: nil as PersistentHistoryToken?)) } },
            code { try c.currentPersistentHistoryToken(fromStores: [store]) },
            code { try c.currentPersistentHistoryToken(fromStores: nil) }
        ]
    }

    /// History requests on a store opened without history tracking fail with the same code on
    /// every store type (`.invalidRequest`: the request needs a store that tracks history), and
    /// the current token is nil. A store that recorded history, opened without tracking, is
    /// refused as it opens (`.historyTrackingRequired`) and left as it was.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func historyRequestsWithoutTrackingFailAlike(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        try c.addPersistentStore(type: type, at: try historyStoreURL(type, in: dir))
        let answers = try Self.untrackedAnswers(c)
        #expect(answers == Array(repeating: "invalidRequest", count: 8) + ["returned nil", "returned nil"])
        guard type != .inMemory else { return }

        let url = try historyStoreURL(type, in: dir, file: "tracked.sqlite")
        let tracked = try makeHistoryCoordinator(type, in: dir, file: "tracked.sqlite")
        try tracked.execute(BatchInsertRequest<HNote>(objects: [["code": "a", "rank": 1]]))
        let numbers = try allHistory(tracked).map(\.transactionNumber)
        let plain = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        let refused = #expect(throws: CoherenceError.self) { try plain.addPersistentStore(type: type, at: url) }
        #expect(refused?.code == .historyTrackingRequired)
        #expect(plain.persistentStores.isEmpty)
        let reopened = try makeHistoryCoordinator(type, in: dir, file: "tracked.sqlite")
        #expect(try allHistory(reopened).map(\.transactionNumber) == numbers)
        #expect(numbers.count == 1)
    }
}
