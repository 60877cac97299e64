import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Predicates and sorts through a one-to-one relationship, read from the side without the
/// foreign key: nothing in a store stops two rows from naming the same destination (two contexts
/// can each link a different owner to one passport), and such a repeated row must not list the
/// source twice. Both stores see the destination with the lowest key, as a fault of the
/// relationship does.
@Suite("One-to-one joins")
struct OneToOneJoinTests {
    /// Passports P1 (owners "a" then "b"), P2 (owner "c") and P3 (no owner).
    private static func populate(_ type: StoreType, in dir: TemporaryDirectory) throws -> (PersistentStoreCoordinator, [String: ObjectID]) {
        let model = try ManagedObjectModel(types: [MapOwner.self, MapPassport.self])
        let coordinator = try makeCoordinator(type, in: dir, model: model)
        let owner = try #require(model.entitiesByName["MapOwner"]), passport = try #require(model.entitiesByName["MapPassport"])
        let p = try insertObjects(coordinator, ["P1", "P2", "P3"].map { rowInsert(passport, ["number": .text($0)]) })
        let o = try insertObjects(
            coordinator,
            [
                rowInsert(owner, ["name": .text("a")], references: ["passport": p[0]]),
                rowInsert(owner, ["name": .text("b")], references: ["passport": p[0]]),
                rowInsert(owner, ["name": .text("c")], references: ["passport": p[1]])
            ])
        return (coordinator, ["P1": p[0], "P2": p[1], "P3": p[2], "a": o[0], "b": o[1], "c": o[2]])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aRepeatedDestinationListsItsSourceOnce(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (coordinator, ids) = try Self.populate(type, in: dir)
        let any = FetchRequest<MapPassport>(predicate: #Predicate { $0.owner?.name != "zzz" })
        #expect(Set(try coordinator.fetchObjectIDs(any)) == [ids["P1"], ids["P2"], ids["P3"]])
        #expect(try coordinator.fetchObjectIDs(any).count == 3)
        #expect(try coordinator.count(for: any) == 3)
        #expect(try coordinator.fetchDictionaries(any).count == 3)

        // P1's owner is "a" (the lowest key), not "b".
        #expect(try coordinator.fetchObjectIDs(FetchRequest<MapPassport>(predicate: #Predicate { $0.owner?.name == "a" })) == [ids["P1"]])
        #expect(try coordinator.fetchObjectIDs(FetchRequest<MapPassport>(predicate: #Predicate { $0.owner?.name == "b" })).isEmpty)

        let sorted = FetchRequest<MapPassport>(sortBy: [SortDescriptor(\.owner?.name)])
        #expect(try coordinator.fetchObjectIDs(sorted) == [ids["P3"], ids["P1"], ids["P2"]])
        let limited = FetchRequest<MapPassport>(sortBy: [SortDescriptor(\.owner?.name)], fetchLimit: 2, fetchOffset: 1)
        #expect(try coordinator.fetchObjectIDs(limited) == [ids["P1"], ids["P2"]])

        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let found = try context.fetch(sorted)
            #expect(found.map(\.number) == ["P3", "P1", "P2"])
            #expect(found.map { $0.owner?.name } == [nil, "a", "c"])
            #expect(try context.count(for: any) == 3)
        }
    }
}
