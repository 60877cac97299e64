import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A batch delete whose fetch request has a limit or offset deletes exactly the objects a fetch
/// of that request returns, also when the entity spans several stores.
@Suite("Batch deletes with a limit or offset")
struct BatchDeleteLimitTests {
    /// Across two stores, each store applied the limit and offset to its own rows: `fetchLimit:
    /// 3` deleted six objects, and an offset skipped the first rows of each store, so objects
    /// the request did not select were deleted.
    @Test(arguments: PostgreSQLTestServer.storeTypes, [false, true])
    func deletesWhatTheFetchSelects(_ type: StoreType, twoStores: Bool) throws {
        let selections: [(limit: Int, offset: Int, order: SortOrder)] = [
            (3, 0, .forward), (3, 2, .reverse), (0, 20, .forward), (5, 0, .reverse), (2, 100, .forward)
        ]
        for selection in selections {
            let dir = try TemporaryDirectory("BatchDeleteLimit")
            let coordinator = try PredicateOracleProbeTests.populatedCoordinator(type, in: dir, twoStores: twoStores)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let request = FetchRequest<OracleItem>(
                    predicate: #Predicate { $0.n != 7 }, sortBy: [SortDescriptor(\.n, order: selection.order)],
                    fetchLimit: selection.limit, fetchOffset: selection.offset)
                let selected = try context.fetch(request)
                let label = "\(type) two stores \(twoStores) \(selection)"
                var delete = BatchDeleteRequest(fetchRequest: request)
                delete.resultType = .objectIDs
                let result = try context.execute(delete)
                #expect(Set(result.objectIDs ?? []) == Set(selected.map(\.objectID)), "\(label)")
                let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
                let left = try reader.performAndWait { try reader.fetch(FetchRequest<OracleItem>()).map(\.key) }
                #expect(left.count == OracleData.count - selected.count, "\(label)")
                #expect(Set(left).isDisjoint(with: selected.map(\.key)), "\(label)")
            }
        }
    }
}
