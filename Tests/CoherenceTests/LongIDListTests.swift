import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// An entity with one integer, for lists of many objects.
final class ListedItem: ManagedObject {
    @Attribute var n: Int = 0
}

/// Very long lists of IDs or numbers in one request: `existing(_:withIDs:)`, `ids.contains(x)`
/// predicates and batch deletes. SQLite limits a statement to 32,766 parameters (by default) and
/// PostgreSQL to 65,535; a list of 70,000 keys must still give the right answer.
@Suite struct LongIDListTests {
    static let count = 70_000

    /// A store of `type` holding items numbered 0 to `count` - 1; their IDs.
    private static func items(_ type: StoreType, in dir: TemporaryDirectory) throws -> (ManagedObjectContext, [ObjectID]) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [ListedItem.self]))
        try coordinator.addPersistentStore(type: type, at: try dir.storeURL(type, "items"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let ids = try context.performAndWait {
            _ = try context.execute(BatchInsertRequest<ListedItem>(objects: (0..<count).map { ["n": $0] }))
            return try context.fetchObjectIDs(FetchRequest<ListedItem>())
        }
        try #require(ids.count == count)
        return (context, ids)
    }

    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []))
    func seventyThousandIDsOrNumbersGiveTheRightAnswer(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("long-lists-\(type)")
        let (context, ids) = try Self.items(type, in: dir)
        try context.performAndWait {
            #expect(try context.existing(ListedItem.self, withIDs: ids).count == Self.count)
            #expect(try context.existing(ListedItem.self, withIDs: ids.reversed() + ids.prefix(10)).count == Self.count)
            // Every even number below twice the count: half of the items.
            let evens = (0..<Self.count).map { $0 * 2 }
            #expect(try context.count(for: FetchRequest<ListedItem>(predicate: #Predicate { evens.contains($0.n) })) == Self.count / 2)
            #expect(
                try context.fetch(FetchRequest<ListedItem>(predicate: #Predicate { !evens.contains($0.n) })).allSatisfy { $0.n % 2 == 1 })
            _ = try context.execute(
                BatchDeleteRequest(fetchRequest: FetchRequest<ListedItem>(predicate: #Predicate { evens.contains($0.n) })))
            #expect(try context.count(for: FetchRequest<ListedItem>()) == Self.count / 2)
            _ = try context.execute(BatchDeleteRequest(objectIDs: ids))
            #expect(try context.count(for: FetchRequest<ListedItem>()) == 0)
        }
    }
}
