import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Predicates that compare with an object the store holds no row of: one not saved yet (a
/// temporary ID) or one of another store. Such an object is no row's destination, and it is
/// not "no object" either.
@Suite("Object comparisons with objects of no row")
struct ObjectIdentityPredicateTests {
    /// `\.owner == unsaved` was translated to `owner IS NULL` in SQL (SQLite and PostgreSQL): it
    /// matched every item without an owner, `!=` left them out, and a batch update or delete
    /// with it reached those rows. The in-memory store and `Predicate.evaluate` match none.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func unsavedObjectIsNoRowsDestination(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { context in
            let all = try context.fetch(FetchRequest<OracleItem>())
            #expect(all.contains { $0.owner == nil })
            let fresh = OracleOwner(context: context)
            fresh.name = "fresh"
            let freshTag = OracleTag(context: context)
            freshTag.label = "fresh"
            let cases: [(String, Predicate<OracleItem>)] = [
                ("owner == unsaved", \.owner == fresh), ("owner != unsaved", \.owner != fresh),
                ("tags contains unsaved", .contains(\.tags, freshTag)),
                ("owner == nil || owner == unsaved", (\.owner == nil) || (\.owner == fresh))
            ]
            for (name, predicate) in cases {
                let want = try all.filter { try predicate.evaluate($0) }.map(\.key).sorted()
                let got = try context.fetch(FetchRequest(predicate: predicate)).map(\.key).sorted()
                #expect(got == want, "\(type) \(name)")
                #expect(try context.count(for: FetchRequest(predicate: predicate)) == want.count, "\(type) \(name)")
                var update = BatchUpdateRequest<OracleItem>(predicate: predicate, propertiesToUpdate: ["mark": 7])
                update.resultType = .count
                #expect(try context.execute(update).count == want.count, "\(type) \(name)")
            }
            // A batch delete with it deletes nothing.
            var delete = BatchDeleteRequest(fetchRequest: FetchRequest<OracleItem>(predicate: \.owner == fresh))
            delete.resultType = .count
            #expect(try context.execute(delete).count == 0)
            #expect(try context.count(for: FetchRequest<OracleItem>()) == all.count)
        }
    }

    /// With two stores, `\.owner == owner` (an owner of the first store) matched the second
    /// store's items without an owner, and `!=` left them out.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func anotherStoresObjectIsNoRowsDestination(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("ObjectIdentityOtherStore")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try PredicateOracleProbeTests.model())
        let first = try coordinator.addPersistentStore(type: type, at: try dir.storeURL(type, "first"))
        let second = try coordinator.addPersistentStore(type: type, at: try dir.storeURL(type, "second"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let owner = OracleOwner(context: context)
            owner.name = "first"
            try context.assign(owner, to: first)
            for i in 0..<4 {
                let item = OracleItem(context: context)
                item.key = "k\(i)"
                try context.assign(item, to: i % 2 == 0 ? first : second)
                if i == 0 { item.owner = owner }
            }
            try context.save()
            let owned = try context.fetch(FetchRequest<OracleItem>(predicate: \.owner == owner)).map(\.key).sorted()
            #expect(owned == ["k0"])
            let others = try context.fetch(FetchRequest<OracleItem>(predicate: \.owner != owner)).map(\.key).sorted()
            #expect(others == ["k1", "k2", "k3"])
            #expect(try context.count(for: FetchRequest<OracleItem>(predicate: \.owner == owner)) == 1)
        }
    }

    /// `existing(_:withIDs:)` compared keys only in SQL: an ID of another entity (an owner's)
    /// returned the item that has the same primary key, which the in-memory store and the
    /// method's documentation leave out.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func idOfAnotherEntityIsNoObjectOfTheFetchedOne(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { (context: ManagedObjectContext) throws in
            let owners = try context.fetch(FetchRequest<OracleOwner>())
            let tags = try context.fetch(FetchRequest<OracleTag>())
            #expect(try context.existing(OracleItem.self, withIDs: [owners[0].objectID]).isEmpty)
            #expect(try context.existing(OracleItem.self, withIDs: [owners[0].objectID, tags[1].objectID]).isEmpty)
            let item = try #require(try context.fetch(FetchRequest<OracleItem>(fetchLimit: 1)).first)
            let mixed = try context.existing(OracleItem.self, withIDs: [owners[1].objectID, item.objectID, tags[0].objectID])
            #expect(mixed.map(\.key) == [item.key])
            #expect(try context.existing(OracleOwner.self, withIDs: owners.map(\.objectID)).count == owners.count)
        }
    }
}
