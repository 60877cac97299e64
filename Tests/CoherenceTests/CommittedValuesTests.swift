import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// People in two towns, saved: a fixture for the context API tests.
enum SavedPeople {
    /// (name, email) of the people saved; odd ones live in Rome, even ones in Oslo.
    static let people: [(String, String?)] = [("apple", "x"), ("Banana", nil), ("cherry", "a"), ("", "b"), ("Émile", nil), ("zed", "B")]

    /// A context on a new store of `type` holding the people (ages 0, 2, 4, 1, 3, 0) and the
    /// towns Oslo and Rome.
    static func context(_ dir: TemporaryDirectory, _ type: StoreType) throws -> ManagedObjectContext {
        let context = try makeContext(dir, type: type)
        try context.performAndWait {
            let oslo = Town(context: context)
            oslo.name = "Oslo"
            let rome = Town(context: context)
            rome.name = "Rome"
            for (i, (name, email)) in people.enumerated() {
                let p = Person(context: context)
                p.name = name
                p.email = email
                p.age = (i * 7) % 5
                p.town = i % 2 == 0 ? oslo : rome
            }
            try context.save()
        }
        return context
    }

    /// A context reading what is stored: on a new coordinator (on the same one for an
    /// in-memory store, which no other coordinator sees).
    static func reader(_ context: ManagedObjectContext) throws -> ManagedObjectContext {
        let c = context.persistentStoreCoordinator
        let coordinator = c.persistentStores.first?.type == .inMemory ? c : try reopen(c)
        return ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "reader")
    }

    /// The person named `name`.
    static func person(_ name: String, in context: ManagedObjectContext) throws -> Person {
        try #require(try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == name })).first)
    }
}

@Suite("Committed values")
struct CommittedValuesTests {
    /// `committedValues(forKeys:)` of a fault whose row is not read yet (from
    /// `object(with:)`) are its row's values: they were all nil, as if nothing were stored.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func ofAFaultAreItsRowsValues(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let id = try context.performAndWait { try SavedPeople.person("zed", in: context).objectID }
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        other.performAndWait {
            let zed = other.object(with: id)
            #expect(zed.isFault)
            let committed = zed.committedValues(forKeys: ["name", "email", "age"])
            #expect(committed["name"] as? String == "zed")
            #expect(committed["email"] as? String == "B")
            #expect(committed["age"] as? Int == 0)
            // Every attribute without keys; and a change leaves the committed value as it was.
            (zed as? Person)?.name = "Zed"
            #expect(zed.committedValues()["name"] as? String == "zed")
            #expect(zed.changedValues()["name"] as? String == "Zed")
        }
    }
}
