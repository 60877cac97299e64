import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// The context's ordered candidates for "updated" objects.
@Suite struct OrderedObjectsTests {
    static func objects(_ n: Int) throws -> [ManagedObject] {
        let model = try makeTestModel()
        let entity = try #require(model.entitiesByName["Town"])
        return (0..<n).map { _ in ManagedObject(entity: entity) }
    }

    @Test func keepsTheOrderObjectsWereAddedIn() throws {
        let objects = try Self.objects(5)
        var c = OrderedObjects()
        for o in objects.reversed() { c.insert(o) }
        c.insert(objects[4])  // already present: keeps its place
        #expect(c.values.map(ObjectIdentifier.init) == objects.reversed().map(ObjectIdentifier.init))
        #expect(c.count == 5)
        #expect(c.contains(objects[2]))
        c._checkInvariants()
    }

    @Test func removalsLeaveNoTraceAndReAddingGoesLast() throws {
        let objects = try Self.objects(6)
        var c: OrderedObjects = [:]
        for o in objects { c.insert(o) }
        c.remove(objects[1])
        c.remove(objects[3])
        c.remove(objects[3])  // removing twice is harmless
        #expect(c.count == 4)
        #expect(!c.contains(objects[1]))
        #expect(c.values.map(ObjectIdentifier.init) == [0, 2, 4, 5].map { ObjectIdentifier(objects[$0]) })
        c.insert(objects[1])
        #expect(c.values.last === objects[1])
        c._checkInvariants()
        for o in objects { c.remove(o) }
        #expect(c.isEmpty && c.values.isEmpty)
        c._checkInvariants()
        // Membership is per collection: another collection does not see this one's objects.
        var other = OrderedObjects()
        c.insert(objects[0])
        #expect(!other.contains(objects[0]))
        other.insert(objects[1])
        #expect(other.contains(objects[1]) && !c.contains(objects[1]))
        // Emptied and refilled, a collection does not mistake old records for membership.
        c = [:]
        #expect(!c.contains(objects[0]) && c.isEmpty)
    }

    @Test func manyRemovalsCompactWithoutLosingObjects() throws {
        let objects = try Self.objects(200)
        var c = OrderedObjects()
        // Add and remove in waves, so the storage fills with holes and compacts several times.
        for wave in 0..<5 {
            for (i, o) in objects.enumerated() where i % 5 == wave { c.insert(o) }
            for (i, o) in objects.enumerated() where i % 5 == wave && i % 2 == 0 { c.remove(o) }
            c._checkInvariants()
        }
        let expected = objects.enumerated().filter { $0.offset % 2 == 1 }.map { ObjectIdentifier($0.element) }
        #expect(Set(c.values.map(ObjectIdentifier.init)) == Set(expected))
        #expect(c.count == expected.count)
        // Within a wave, the survivors keep the order they were added in.
        let firstWave = c.values.prefix(20).map { o in objects.firstIndex { $0 === o } ?? -1 }
        #expect(firstWave == firstWave.sorted())
    }

    @Test func aContextSavesItsUpdatesInTheOrderTheyWereMade() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for i in 0..<5 {
                let t = Town(context: context)
                t.name = "T\(i)"
            }
            try context.save()
            let towns = try context.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)]))
            for t in towns.reversed() { t.population += 1 }
            towns[2].population -= 1  // back to its saved value: not updated
            #expect(context.updatedObjects.count == 4)
            #expect(context.updatedCandidates.values.map(\.objectID) == towns.reversed().map(\.objectID))
            try context.save()
            context.reset()
            let again = try context.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)]))
            #expect(again.map(\.population) == [1, 1, 0, 1, 1])
        }
    }
}
