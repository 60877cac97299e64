import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A fetched object that is still a fault has shown no values yet: when a later fetch reads its
/// row again, the object reads the row as that fetch found it, as a Core Data fault does.
@Suite("Refetched faults")
struct RefetchedFaultTests {
    /// Another context (of the same coordinator, or of another one) changes a row after this
    /// context fetched it as a fault: a fetch matching the new value returns the object, which
    /// reads the new value (it read the old one: the result did not match its own predicate).
    @Test(arguments: PostgreSQLTestServer.storeTypes, [false, true])
    func aFaultReadsTheRowTheFetchMatched(_ type: StoreType, otherCoordinator: Bool) throws {
        if type == .inMemory && otherCoordinator { return }  // no other coordinator sees it
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        context.performAndWait { context.reset() }
        let coordinator = otherCoordinator ? try reopen(context.persistentStoreCoordinator) : context.persistentStoreCoordinator
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let zed = try context.performAndWait {
            let all = try context.fetch(FetchRequest<Person>())
            return try #require(all.first { $0.objectID == (try SavedPeople.person("zed", in: context)).objectID })
        }
        try context.performAndWait { #expect(zed.isFault) }
        try other.performAndWait {
            let z = try SavedPeople.person("zed", in: other)
            z.age = 55
            z.name = "Zed"
            try other.save()
        }
        try context.performAndWait {
            let found = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age == 55 }))
            #expect(found == [zed])
            #expect(zed.age == 55 && zed.name == "Zed")
            #expect(!context.hasChanges)
            // The object builds on the row it read: a change saves without a conflict.
            zed.score = 1
            try context.save()
        }
        let reader = try SavedPeople.reader(context)
        try reader.performAndWait {
            let z = try SavedPeople.person("Zed", in: reader)
            #expect(z.age == 55 && z.score == 1)
        }
    }

    /// A non-faulting fetch realizes such a fault with the row it read.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aNonFaultingFetchRealizesTheNewRow(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        context.performAndWait { context.reset() }
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let all = try context.performAndWait { try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])) }
        try other.performAndWait {
            for p in try other.fetch(FetchRequest<Person>()) { p.age += 10 }
            try other.save()
        }
        try context.performAndWait {
            var r = FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])
            r.returnsObjectsAsFaults = false
            let again = try context.fetch(r)
            #expect(again == all)
            #expect(again.allSatisfy { !$0.isFault })
            #expect(again.allSatisfy { $0.age >= 10 }, "\(again.map(\.age))")
        }
    }
}
