import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Batch requests record persistent history in their own transaction, on both stores.
@Suite("Batch requests: history")
struct BatchHistoryTests {
    @Test(arguments: [StoreType.sqlite, StoreType.inMemory])
    func batchRequestsRecordHistory(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        var insert = BatchInsertRequest<HNote>(objects: [["code": "a", "rank": 1], ["code": "b", "rank": 2]])
        insert.resultType = .objectIDs
        let inserted = try c.execute(insert)
        var update = BatchUpdateRequest<HNote>(predicate: #Predicate { $0.rank > 1 }, propertiesToUpdate: ["body": "x"])
        update.resultType = .objectIDs
        let updated = try c.execute(update)
        var delete = BatchDeleteRequest<HNote>(fetchRequest: FetchRequest<HNote>(predicate: #Predicate { $0.code == "a" }))
        delete.resultType = .objectIDs
        let deleted = try c.execute(delete)

        let history = try allHistory(c)
        #expect(history.count == 3)
        let kinds = history.map { t in Set((t.changes ?? []).map(\.changeType)) }
        #expect(kinds == [[.insert], [.update], [.delete]])
        #expect(Set((history[0].changes ?? []).map(\.changedObjectID)) == inserted.insertedObjectIDs)
        #expect(history[1].changes?.first?.updatedProperties == ["body"])
        #expect(Set((history[1].changes ?? []).map(\.changedObjectID)) == updated.updatedObjectIDs)
        #expect(Set((history[2].changes ?? []).map(\.changedObjectID)) == deleted.deletedObjectIDs)
    }
}
