import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherenceStore

/// A save that moves unique values along a chain (Paris → Lyon, Lyon → Nice, Nice → Rome) clashes
/// with values it is itself giving up. Taking over the clashing row (object trump's upsert) would
/// write one object's values into another's row and drop that object's changes: the save is
/// refused instead, and the store keeps what it had.
@Suite("Uniqueness conflicts within one save")
struct UniquenessChainTests {
    /// The towns of a store, as "name=population", sorted.
    private static func towns(_ c: PersistentStoreCoordinator) throws -> [String] {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        return try context.performAndWait {
            try context.fetch(FetchRequest<Town>()).map { "\($0.name)=\($0.population)" }.sorted()
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes, [MergePolicy.mergeByPropertyObjectTrump, .overwrite, .mergeByPropertyStoreTrump])
    func aChainOfRenamesIsRefusedAndChangesNothing(_ type: StoreType, _ policy: MergePolicy) throws {
        let dir = try TemporaryDirectory()
        let c = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            for (name, population) in [("Paris", 1), ("Lyon", 2), ("Nice", 3)] {
                let t = Town(context: context)
                t.name = name
                t.population = population
            }
            try context.save()
        }
        let before = try Self.towns(c)
        context.mergePolicy = policy
        let error = context.performAndWait { () -> CoherenceError? in
            do {
                let towns = try context.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.population)]))
                towns[2].name = "Rome"
                towns[1].name = "Nice"
                towns[0].name = "Lyon"
                try context.save()
                return nil
            } catch {
                return error as? CoherenceError
            }
        }
        // Either refused (a store that checks each row as it writes it), or saved whole: never
        // one object's values in another's row.
        let after = try Self.towns(c)
        if let error {
            #expect(error.code == .conflict, "\(error)")
            #expect(after == before)
        } else {
            #expect(after == ["Lyon=1", "Nice=2", "Rome=3"])
        }
        #expect(after == before || after == ["Lyon=1", "Nice=2", "Rome=3"])
    }
}
