import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// A to-many relationship that is its own inverse (`friends` ↔ `friends`) is saved: both ends
// read it back, and removing a pair or deleting an object removes it from both.

/// A person whose `friends` relationship is its own inverse.
final class Mate: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "friends") var friends: Set<Mate>
}

@Suite("Self-inverse relationships")
struct SelfInverseRelationshipTests {
    /// Every mate's friends, by name, read by a new context.
    private func friends(_ coordinator: PersistentStoreCoordinator) throws -> [String: [String]] {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try reader.performAndWait {
            var result: [String: [String]] = [:]
            for m in try reader.fetch(FetchRequest<Mate>()) { result[m.name] = m.friends.map(\.name).sorted() }
            return result
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aToManyThatIsItsOwnInverseIsSavedFromBothEnds(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try ManagedObjectModel(types: [Mate.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let mates = ["a", "b", "c"].map { name in
                let m = Mate(context: context)
                m.name = name
                return m
            }
            mates[0].friends = [mates[1], mates[2]]
            try context.save()
        }
        #expect(try friends(coordinator) == ["a": ["b", "c"], "b": ["a"], "c": ["a"]])

        try context.performAndWait {
            let mates = try context.fetch(FetchRequest<Mate>())
            let a = try #require(mates.first { $0.name == "a" })
            let b = try #require(mates.first { $0.name == "b" })
            let c = try #require(mates.first { $0.name == "c" })
            b.friends.remove(a)
            c.friends.insert(b)
            try context.save()
        }
        #expect(try friends(coordinator) == ["a": ["c"], "b": ["c"], "c": ["a", "b"]])

        try context.performAndWait {
            let c = try #require(try context.fetch(FetchRequest<Mate>()).first { $0.name == "c" })
            context.delete(c)
            try context.save()
        }
        #expect(try friends(coordinator) == ["a": [], "b": []])
    }
}
