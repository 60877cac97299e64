import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

final class MapOwner: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "owner") var passport: MapPassport?
}

final class MapPassport: ManagedObject {
    @Attribute var number: String = ""
    @Relationship(inverse: "passport") var owner: MapOwner?
}

/// An entity whose initializer runs a hook: code that runs while a fetch reads rows.
final class HookedRow: ManagedObject {
    @Attribute var n: Int = 0
    nonisolated(unsafe) static var onInit: (() -> Void)?
    required init(entity: EntityDescription) {
        super.init(entity: entity)
        HookedRow.onInit?()
    }
}

final class HookedTown: ManagedObject {
    @Attribute var name: String = ""
}

// Each test below that runs code from an initializer has classes of its own: tests run in
// parallel, and a hook is a global.

/// An entity whose initializer runs a hook (for `aFaultRegisteredWhileItsRowIsReadIsFilledFromTheRow`).
final class RegisteringRow: ManagedObject {
    @Attribute var n: Int = 0
    nonisolated(unsafe) static var onInit: (() -> Void)?
    required init(entity: EntityDescription) {
        super.init(entity: entity)
        RegisteringRow.onInit?()
    }
}

/// A two-entity hierarchy whose initializer runs a hook (for `aFailedFetchLeavesObjectsOthersRegistered`).
class AbandonShape: ManagedObject {
    @Attribute var n: Int = 0
    nonisolated(unsafe) static var onInit: (() -> Void)?
    required init(entity: EntityDescription) {
        super.init(entity: entity)
        AbandonShape.onInit?()
    }
}

final class AbandonCircle: AbandonShape {
    @Attribute var radius: Double = 0
}

/// Counts its awakenings and runs a hook from its initializer (for `eachObjectAwakesOnce`).
final class AwakeRow: ManagedObject {
    @Attribute var n: Int = 0
    nonisolated(unsafe) static var onInit: (() -> Void)?
    var awakenings = 0
    required init(entity: EntityDescription) {
        super.init(entity: entity)
        AwakeRow.onInit?()
    }
    override func awakeFromFetch() { awakenings += 1 }
}

/// Registers faults for some IDs the first time its hook runs (from an initializer, while a
/// fetch reads rows), as code other than the fetch would; the faults' own initializers run the
/// hook again, which then does nothing.
final class FaultRegistrar {
    private(set) var faults: [ManagedObject] = []
    private var inHook = false
    let ids: [ObjectID]
    unowned let context: ManagedObjectContext

    init(_ ids: [ObjectID], in context: ManagedObjectContext) {
        self.ids = ids
        self.context = context
    }

    func hook() {
        guard !inHook, faults.isEmpty else { return }
        inHook = true
        faults = ids.map { context.object(with: $0) }  // unfilled faults, registered
        inHook = false
    }
}

/// An entity that reads a value when it goes away and runs a hook from its initializer (for
/// `aDiscardedDuplicateKeepsReadableValues`).
final class KeptPassport: ManagedObject {
    @Attribute var number: String = ""
    nonisolated(unsafe) static var numbersAtDeinit: [String] = []
    nonisolated(unsafe) static var onInit: (() -> Void)?
    required init(entity: EntityDescription) {
        super.init(entity: entity)
        KeptPassport.onInit?()
    }
    // Objects with an ID only: the model's reflection makes probe objects of the class, whose
    // properties have no slots.
    deinit { if _objectID != nil { KeptPassport.numbersAtDeinit.append(number) } }
}

/// The identity map (an open-addressing table keyed by object ID) and the lifetime of fetched
/// objects: the map owns its objects, a fetch group does not.
@Suite struct IdentityMapTests {
    /// Unregistered objects of two entities whose keys overlap, in two stores: equal keys land
    /// in the same buckets' neighbourhood only by chance, so removals exercise the shifts.
    static func objects(count: Int) throws -> [ManagedObject] {
        let model = try makeTestModel()
        let person = try #require(model.entitiesByName["Person"]), town = try #require(model.entitiesByName["Town"])
        let stores = [UUID(), UUID()]
        var result: [ManagedObject] = []
        for i in 0..<count {
            let entity = i % 2 == 0 ? person : town
            let o = entity.managedObjectClass.init(entity: entity)
            o._objectID = ObjectID(entity: entity, storeIdentifier: stores[(i / 2) % 2], primaryKey: Int64(i / 4))
            result.append(o)
        }
        return result
    }

    @Test func findsEveryObjectUnderItsIDAndNothingElse() throws {
        let objects = try Self.objects(count: 2_000)
        var map = IdentityMap()
        for o in objects { map[try #require(o._objectID)] = o }
        #expect(map.count == objects.count)
        map._checkInvariants()
        for o in objects { #expect(map[try #require(o._objectID)] === o) }
        let town = try #require(objects[1]._objectID?.entity)
        #expect(map[ObjectID(entity: town, storeIdentifier: UUID(), primaryKey: 0)] == nil)
        #expect(map[ObjectID(entity: town, storeIdentifier: nil, primaryKey: 0)] == nil)
        #expect(Set(map.values.map(ObjectIdentifier.init)) == Set(objects.map(ObjectIdentifier.init)))
    }

    @Test func removalsKeepTheOthersFindable() throws {
        let objects = try Self.objects(count: 3_000)
        var map = IdentityMap()
        map.reserveCapacity(10)
        for o in objects { map.insert(o, for: try #require(o._objectID)) }
        // Remove every third object, in a scattered order.
        let removed = Set(stride(from: 0, to: objects.count, by: 3).map { ($0 * 7919) % objects.count })
        for i in removed.sorted(by: { ($0 * 31) % 97 < ($1 * 31) % 97 }) {
            #expect(map.remove(try #require(objects[i]._objectID)) === objects[i])
        }
        map._checkInvariants()
        #expect(map.count == objects.count - removed.count)
        for (i, o) in objects.enumerated() {
            let found = map[try #require(o._objectID)]
            #expect(removed.contains(i) ? found == nil : found === o)
        }
        #expect(map.remove(try #require(objects[removed.first ?? 0]._objectID)) == nil)
    }

    /// Keys that all share their low six bits (every 64th key: the same bucket of each run)
    /// and runs that land on one another: every object is found, before and after removals.
    @Test func keysOfOneBucketOfEachRunStayFindable() throws {
        #expect(IdentityMap.step &* IdentityMap.stepInverse == 1)
        #expect(IdentityMap.steps(from: 5, to: (5 + 3 * IdentityMap.step) & 1023, mask: 1023) == 3)
        let model = try makeTestModel()
        let person = try #require(model.entitiesByName["Person"])
        let store = UUID()
        var objects: [ManagedObject] = []
        for i in 0..<4_000 {
            let o = person.managedObjectClass.init(entity: person)
            // Every 64th key, then a dense run of keys after them.
            let key = i < 3_000 ? Int64(i) * 64 : Int64(1_000_000 + i - 3_000)
            o._objectID = ObjectID(entity: person, storeIdentifier: store, primaryKey: key)
            objects.append(o)
        }
        var map = IdentityMap()
        for o in objects { map.insert(o, for: try #require(o._objectID)) }
        map._checkInvariants()
        // Keys 64 apart do not pile up on the first bucket of each run.
        let lengths = map._probeLengths()
        #expect(lengths.mean < 2.5, "mean probe length \(lengths.mean)")
        for i in stride(from: 0, to: objects.count, by: 2) {
            #expect(map.remove(try #require(objects[i]._objectID)) === objects[i])
        }
        map._checkInvariants()
        #expect(map.count == objects.count / 2)
        for (i, o) in objects.enumerated() {
            let found = map[try #require(o._objectID)]
            #expect(i % 2 == 0 ? found == nil : found === o)
        }
    }

    @Test func replacingAnObjectKeepsOneEntry() throws {
        let objects = try Self.objects(count: 1)
        let o = try #require(objects.first), id = try #require(o._objectID)
        let twin = o.entity.managedObjectClass.init(entity: o.entity)
        twin._objectID = id
        var map = IdentityMap()
        map[id] = o
        map[id] = twin
        #expect(map.count == 1 && map[id] === twin)
        map[id] = nil
        #expect(map.isEmpty && map[id] == nil)
    }

    @Test func copiesAreIndependent() throws {
        let objects = try Self.objects(count: 100)
        var map = IdentityMap()
        for o in objects { map[try #require(o._objectID)] = o }
        var copy = map
        for o in objects.prefix(50) { copy[try #require(o._objectID)] = nil }
        #expect(map.count == 100 && copy.count == 50)
        for o in objects { #expect(map[try #require(o._objectID)] === o) }
        // Iterating while removing iterates the map as it was.
        var seen = 0
        for o in map.values {
            map[try #require(o._objectID)] = nil
            seen += 1
        }
        #expect(seen == 100 && map.isEmpty && copy.count == 50)
        map._checkInvariants()
        copy._checkInvariants()
    }

    @Test func theMapOwnsItsObjects() throws {
        weak var weakObject: ManagedObject?
        var map = IdentityMap()
        do {
            let objects = try Self.objects(count: 10)
            weakObject = objects[3]
            for o in objects { map[try #require(o._objectID)] = o }
        }
        #expect(weakObject != nil)
        map = IdentityMap()
        #expect(weakObject == nil)
    }

    /// Growing moves the entries with their references: each object is released once, when
    /// the last map holding it goes (also after a copy grew on its own).
    @Test func aMapThatGrewOwnsEachObjectOnce() throws {
        weak var first: ManagedObject?
        weak var last: ManagedObject?
        var map = IdentityMap()
        var copy = IdentityMap()
        do {
            let objects = try Self.objects(count: 5_000)
            first = objects.first
            last = objects.last
            for (i, o) in objects.enumerated() {
                map[try #require(o._objectID)] = o
                if i == 1_000 { copy = map }  // the copy shares the table until one of them grows
            }
            for o in objects.prefix(1_001) { #expect(copy[try #require(o._objectID)] === o) }
            copy.reserveCapacity(20_000)
        }
        map._checkInvariants()
        copy._checkInvariants()
        #expect(map.count == 5_000 && copy.count == 1_001)
        #expect(first != nil && last != nil)
        map = IdentityMap()
        #expect(first != nil && last == nil)  // the copy still holds the first objects
        copy = IdentityMap()
        #expect(first == nil)
    }

    /// Growing a shared table moves the entries of a copy (the table stays with the other
    /// map), also while the old table's `values` are being iterated.
    @Test func aSharedMapThatGrowsKeepsBothTables() throws {
        weak var first: ManagedObject?
        weak var last: ManagedObject?
        var map = IdentityMap()
        var copy = IdentityMap()
        var seen = 0
        do {
            let objects = try Self.objects(count: 3_000)
            first = objects.first
            last = objects.last
            for o in objects.prefix(1_024) { map[try #require(o._objectID)] = o }
            #expect(map.capacity == 2_048)
            copy = map
            for o in map.values {
                _ = o
                if seen == 0 { for p in objects.dropFirst(1_024) { map[try #require(p._objectID)] = p } }
                seen += 1
            }
            #expect(map.capacity > 2_048 && copy.capacity == 2_048)
        }
        #expect(seen == 1_024)
        map._checkInvariants()
        copy._checkInvariants()
        #expect(map.count == 3_000 && copy.count == 1_024)
        map = IdentityMap()
        #expect(first != nil && last == nil)
        copy = IdentityMap()
        #expect(first == nil)
    }

    /// A sparse table shrinks to fit, keeping every object findable and owned once.
    @Test func aSparseMapShrinks() throws {
        weak var kept: ManagedObject?
        var map = IdentityMap()
        do {
            let objects = try Self.objects(count: 10)
            kept = objects[7]
            map.reserveCapacity(20_000)
            for o in objects { map[try #require(o._objectID)] = o }
            #expect(map.capacity >= 32_768)
            map.shrinkIfSparse()
            #expect(map.capacity == 32)
            map._checkInvariants()
            for o in objects { #expect(map[try #require(o._objectID)] === o) }
        }
        #expect(kept != nil)
        map = IdentityMap()
        #expect(kept == nil)
    }

    /// Fetching objects the context holds already does not grow the identity map.
    @Test func aRefetchDoesNotGrowTheIdentityMap() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let town = try #require(coordinator.managedObjectModel.entity(for: Town.self))
        try insertObjects(coordinator, (0..<5_000).map { rowInsert(town, ["name": .text("T\($0)")]) })
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            var capacities: [Int] = []
            for _ in 0..<4 {
                let fetched = try context.fetch(FetchRequest<Town>()).count
                #expect(fetched == 5_000)
                capacities.append(context.registered.capacity)
            }
            #expect(Set(capacities).count == 1)
            #expect(context.registered.count == 5_000)
        }
    }

    /// A fetch that returns far fewer rows than its statement's last runs gives back the room
    /// it reserved: in the results, the fetch group and the identity map.
    @Test func aSmallFetchAfterLargeOnesGivesBackItsReservation() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let town = try #require(coordinator.managedObjectModel.entity(for: Town.self))
        try insertObjects(coordinator, (0..<20_000).map { rowInsert(town, ["name": .text("T\($0)")]) })
        let adults = FetchRequest<Town>(predicate: #Predicate { $0.population >= 0 })
        for _ in 0..<2 {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            #expect(try context.performAndWait { try context.fetch(adults).count } == 20_000)
        }
        let raw = try SQLiteConnection(location: .file(dir.file("store.sqlite").path))
        try raw.execute("UPDATE \"Town\" SET \"population\" = -1 WHERE Z_PK > 1")
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try fresh.performAndWait {
            let one = try fresh.fetch(adults)
            #expect(one.count == 1)
            #expect(one.capacity < 100)
            #expect(fresh.registered.capacity < 100)
            let limited = try fresh.fetch(FetchRequest<Town>(fetchLimit: 1))
            #expect(limited.count == 1 && limited.capacity < 100)
        }
    }

    // MARK: Lifetimes through contexts

    /// Ten people in two towns.
    static func store(_ dir: TemporaryDirectory) throws -> PersistentStoreCoordinator {
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let towns = ["Rome", "Oslo"].map { name in
                let t = Town(context: context)
                t.name = name
                return t
            }
            for i in 0..<10 {
                let p = Person(context: context)
                p.name = "p\(i)"
                p.age = i
                p.town = towns[i % 2]
            }
            try context.save()
        }
        return coordinator
    }

    @Test func fetchedObjectsGoAwayWithTheirContext() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        weak var weakPerson: Person?
        weak var weakTown: Town?
        weak var weakHandle: ContextHandle?
        weak var weakGroup: FetchGroup?
        do {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            weakHandle = context.handle
            try context.performAndWait {
                let people = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]))
                #expect(people.count == 10)
                weakPerson = people[4]
                weakGroup = people[4]._group
                weakTown = people[4].town  // a to-one read loads the group's towns
                #expect(weakTown?.name == "Rome")
            }
            #expect(weakPerson != nil && weakTown != nil && weakGroup != nil)
        }
        #expect(weakPerson == nil)
        #expect(weakTown == nil)
        // The references the fetch gave its objects to the group and the handle balance out.
        #expect(weakGroup == nil)
        #expect(weakHandle == nil)
    }

    @Test func anObjectOutlivingItsContextKeepsItsValuesAndLeavesItsGroup() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        var kept: Person?
        weak var weakOther: Person?
        do {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let people = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]))
                _ = people[2].name  // filled
                kept = people[2]
                weakOther = people[3]
            }
        }
        #expect(weakOther == nil)
        let person = try #require(kept)
        #expect(person.managedObjectContext == nil)
        #expect(person._group != nil)  // its group lives on with it alone
        #expect(Array(try #require(person._group).objects).count == 1)
        #expect(person.name == "p2" && person.age == 2)
    }

    /// An object leaves its fetch group when its context stops registering it, on the context's
    /// executor: a member released later on another thread (kept, say, by a notification
    /// observer there) then touches no group its context may be using.
    @Test func anObjectLeavesItsGroupWhenItsContextStopsRegisteringIt() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let (deleted, mergedAway, stays) = try context.performAndWait {
            let people = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]))
            #expect(people.count == 10)
            #expect(people.allSatisfy { $0._group === people[0]._group })
            context.delete(people[1])
            try context.save()  // the deleted object is forgotten
            return (people[1], people[2], people[3])
        }
        let mergedID = context.performAndWait { mergedAway.objectID }
        // Another context deletes an object; merging its save forgets the object here too.
        try other.performAndWait {
            other.delete(try other.existingObject(with: mergedID))
            try other.save()
        }
        context.performAndWait {
            #expect(mergedAway._group != nil)  // still registered until the merge
            let note = Notification(
                name: ManagedObjectContext.didSaveNotification, object: nil,
                userInfo: [ManagedObjectContext.NotificationKey.deletedObjectIDs: Set([mergedID])])
            context.mergeChanges(fromContextDidSave: note)
        }
        try context.performAndWait {
            #expect(deleted._group == nil)
            #expect(stays._group != nil)
            let group = try #require(stays._group)
            #expect(mergedAway._group == nil)
            #expect(!group.objects.contains { $0 === deleted || $0 === mergedAway })
            #expect(Array(group.objects).count == 8)
        }
        // A child context that saves a delete into its parent forgets the object too.
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: context)
        try child.performAndWait {
            let people = try child.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]))
            #expect(people.count == 8)
            let pushedAway = people[0], kept = people[1]
            child.delete(pushedAway)
            try child.save()
            #expect(pushedAway._group == nil)
            #expect(kept._group != nil)
            #expect(Array(try #require(kept._group).objects).count == 7)
        }
    }

    /// Runs `release` for every part on a thread of its own, all at once: each thread waits at
    /// a barrier until every one is there.
    static func onThreadsAtOnce(_ count: Int, _ release: @escaping @Sendable (Int) -> Void) {
        let arrived = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        for k in 0..<count {
            Thread {
                arrived.signal()
                go.wait()
                release(k)
                done.signal()
            }.start()
        }
        for _ in 0..<count { arrived.wait() }
        for _ in 0..<count { go.signal() }
        for _ in 0..<count { done.wait() }
    }

    /// Objects handed to one thread each (used by one thread at a time, handed over by
    /// semaphores).
    final class Part: @unchecked Sendable {
        var objects: [ManagedObject] = []
    }

    /// Members that outlive their context, released on several threads at once, each clear
    /// their entry of the group they share; the group and every object go away.
    @Test func membersOutlivingTheirContextCanBeReleasedOnSeveralThreadsAtOnce() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        struct WeakObject { weak var value: ManagedObject? }
        let parts = (0..<5).map { _ in Part() }
        weak var weakGroup: FetchGroup?
        var weakPeople: [WeakObject] = []
        do {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let people = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]))
                #expect(people.count == 10)
                weakGroup = people[0]._group
                weakPeople = people.map { WeakObject(value: $0) }
                for (k, part) in parts.enumerated() { part.objects = [people[2 * k], people[2 * k + 1]] }
            }
        }
        #expect(weakGroup != nil)  // alive with its members, the context gone
        Self.onThreadsAtOnce(parts.count) { k in parts[k].objects = [] }
        #expect(weakPeople.allSatisfy { $0.value == nil })
        #expect(weakGroup == nil)
    }

    /// Many members of one group released on many threads at once, one at a time, neighbours
    /// on other threads. Without the lock on these removals, a write could find the list's
    /// storage shared for a moment and copy it while another thread wrote (it crashed every
    /// time in debug builds).
    @Test func manyMembersOfOneGroupReleasedOnManyThreadsAtOnce() throws {
        let model = try ManagedObjectModel(types: [MapOwner.self, MapPassport.self])
        let entity = try #require(model.entitiesByName["MapOwner"])
        let threads = 8, perThread = 4000
        let parts = (0..<threads).map { _ in Part() }
        weak var weakGroup: FetchGroup?
        do {
            let group = FetchGroup()
            weakGroup = group
            for i in 0..<(threads * perThread) {
                let o = MapOwner(entity: entity)
                group.add(o)
                parts[i % threads].objects.append(o)
            }
        }
        Self.onThreadsAtOnce(threads) { k in
            while !parts[k].objects.isEmpty { _ = parts[k].objects.popLast() }
        }
        #expect(weakGroup == nil)
    }

    /// An object the identity map renames (temporary ID to permanent, when a parent context
    /// saves what a child pushed) stays registered, and stays in its fetch group.
    @Test func anObjectRenamedInTheMapKeepsItsGroup() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.store(dir)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        let fresh: [Person] = try child.performAndWait {
            let towns = try child.fetch(FetchRequest<Town>())
            for i in 0..<4 {
                let p = Person(context: child)
                p.name = "new\(i)"
                p.age = 100 + i
                p.town = towns[i % 2]
            }
            try child.save()  // pushed: registered under temporary IDs
            let people = try child.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]))
            #expect(people.count == 14)
            let fresh = people.filter { $0.age >= 100 }
            #expect(fresh.count == 4 && fresh.allSatisfy { $0.objectID.isTemporaryID })
            #expect(fresh.allSatisfy { $0._group != nil && $0._group === people[0]._group })
            return fresh
        }
        try parent.performAndWait { try parent.save() }  // the permanent IDs reach the child
        child.performAndWait {
            #expect(fresh.allSatisfy { !$0.objectID.isTemporaryID })
            #expect(fresh.allSatisfy { $0._group != nil && $0._group === fresh[0]._group })
        }
    }

    /// An object replaced in the identity map by another one under its ID leaves its group.
    @Test func anObjectReplacedInTheMapLeavesItsGroup() throws {
        let model = try ManagedObjectModel(types: [MapOwner.self, MapPassport.self])
        let entity = try #require(model.entitiesByName["MapOwner"])
        let id = ObjectID(entity: entity, storeIdentifier: UUID(), primaryKey: 7)
        let first = MapOwner(entity: entity), second = MapOwner(entity: entity)
        first._objectID = id
        second._objectID = id
        let group = FetchGroup()
        group.add(first)
        var map = IdentityMap()
        map[id] = first
        map[id] = first  // the same object again: stays
        #expect(first._group === group)
        map[id] = second
        #expect(first._group == nil)
        #expect(Array(group.objects).isEmpty)
        #expect(map[id] === second)
    }

    /// A predicate through a one-to-one relationship, from the side without the foreign key, is a
    /// join; when two rows point at one destination (nothing in the store forbids it), the
    /// destination is still one object, registered once.
    @Test(arguments: [false, true])
    func aRepeatedRowIsOneObjectRegisteredOnce(asFaults: Bool) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [MapOwner.self, MapPassport.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let owner = try #require(model.entitiesByName["MapOwner"]), passport = try #require(model.entitiesByName["MapPassport"])
        let p = try #require(try insertObjects(coordinator, [rowInsert(passport, ["number": .text("P1")])]).first)
        try insertObjects(
            coordinator,
            [
                rowInsert(owner, ["name": .text("a")], references: ["passport": p]),
                rowInsert(owner, ["name": .text("b")], references: ["passport": p])
            ])
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            var request = FetchRequest<MapPassport>(predicate: #Predicate { $0.owner?.name != "zzz" })
            request.returnsObjectsAsFaults = asFaults
            let found = try context.fetch(request)
            #expect(!found.isEmpty)
            #expect(Set(found.map(ObjectIdentifier.init)).count == 1)
            #expect(context.registered.count == 1)
            context.registered._checkInvariants()
            #expect(found.first?.number == "P1")
            context.registered[p] = nil
            #expect(context.registered.isEmpty && context.registeredObject(for: p) == nil)
        }
    }

    /// Code that runs while a fetch reads its rows (here a subclass's initializer) sees every
    /// registered object: a lookup or a fetch of its own finds the registered one, not a copy.
    @Test func codeRunWhileRowsAreReadSeesTheIdentityMap() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [HookedRow.self, HookedTown.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let townEntity = try #require(model.entitiesByName["HookedTown"]), rowEntity = try #require(model.entitiesByName["HookedRow"])
        let townID = try #require(try insertObjects(coordinator, [rowInsert(townEntity, ["name": .text("T")])]).first)
        try insertObjects(coordinator, [rowInsert(rowEntity, ["n": .integer(1)]), rowInsert(rowEntity, ["n": .integer(2)])])
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let town = try #require(try context.fetch(FetchRequest<HookedTown>()).first)
            let request = FetchRequest<HookedRow>(sortBy: [SortDescriptor(\.n)])
            nonisolated(unsafe) var seen: [ManagedObject] = []
            HookedRow.onInit = {
                seen.append(context.object(with: townID))
                if let fetched = try? context.fetch(FetchRequest<HookedTown>()).first { seen.append(fetched) }
            }
            defer { HookedRow.onInit = nil }
            let rows = try context.fetch(request)
            HookedRow.onInit = nil
            #expect(rows.map(\.n) == [1, 2])
            // Two per row at least (probe objects made to resolve the sort key run the hook too).
            #expect(seen.count >= 4 && seen.allSatisfy { $0 === town })
            #expect(context.registered.count == 3)
            context.registered._checkInvariants()
        }
    }

    /// An initializer that registers a fault for the very row being read (before the fetch
    /// registers that row's new object): the fault is the row's object, filled from the row.
    @Test func aFaultRegisteredWhileItsRowIsReadIsFilledFromTheRow() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [RegisteringRow.self, HookedTown.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let rowEntity = try #require(model.entitiesByName["RegisteringRow"])
        let ids = try insertObjects(coordinator, [rowInsert(rowEntity, ["n": .integer(1)]), rowInsert(rowEntity, ["n": .integer(2)])])
        for asFaults in [true, false] {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let registrar = FaultRegistrar(ids, in: context)
                RegisteringRow.onInit = registrar.hook
                defer { RegisteringRow.onInit = nil }
                var request = FetchRequest<RegisteringRow>()
                request.returnsObjectsAsFaults = asFaults
                let rows = try context.fetch(request).sorted { $0.n < $1.n }
                RegisteringRow.onInit = nil
                let faults = registrar.faults
                #expect(faults.count == 2)
                #expect(rows.map(\.n) == [1, 2])
                #expect(Set(rows.map(ObjectIdentifier.init)) == Set(faults.map(ObjectIdentifier.init)))
                #expect(context.registered.count == 2)
                #expect(rows.allSatisfy { !$0.hasChanges })
                context.registered._checkInvariants()
            }
        }
    }

    /// A failed fetch into an empty map takes out the objects it made, not those that code it
    /// ran (an initializer) registered under its rows' IDs: they stay registered.
    @Test func aFailedFetchLeavesObjectsOthersRegistered() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [AbandonShape.self, AbandonCircle.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let circle = try #require(model.entitiesByName["AbandonCircle"])
        let ids = try insertObjects(coordinator, (1...4).map { rowInsert(circle, ["n": .integer(Int64($0))]) })
        // The last row names an entity outside the hierarchy.
        let raw = try SQLiteConnection(location: .file(dir.file("store.sqlite").path))
        try raw.execute("UPDATE \"AbandonShape\" SET Z_ENT = 999 WHERE Z_PK = (SELECT max(Z_PK) FROM \"AbandonShape\")")
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let registrar = FaultRegistrar(Array(ids.prefix(2)), in: context)  // "someone else"
            AbandonShape.onInit = registrar.hook
            defer { AbandonShape.onInit = nil }
            #expect(throws: CoherenceError.self) {
                // No sort key: resolving one makes a probe object, whose initializer would run
                // the hook before the fetch.
                try context.fetch(FetchRequest<AbandonShape>())
            }
            AbandonShape.onInit = nil
            let faults = registrar.faults
            #expect(faults.count == 2)
            for (fault, id) in zip(faults, ids) {
                #expect(context.registeredObject(for: id) === fault)
                #expect(fault.managedObjectContext === context)
            }
            #expect(context.registered.count == 2)  // the fetch's own objects are gone
            context.registered._checkInvariants()
        }
    }

    /// A non-faulting fetch awakes each object once, also when code it ran (an initializer's
    /// own non-faulting fetch) registered and awoke the rows' objects first.
    @Test func eachObjectAwakesOnce() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [AwakeRow.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let entity = try #require(model.entitiesByName["AwakeRow"])
        try insertObjects(coordinator, (1...3).map { rowInsert(entity, ["n": .integer(Int64($0))]) })
        for nested in [false, true] {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                nonisolated(unsafe) var ran = false
                AwakeRow.onInit = {
                    guard nested, !ran else { return }
                    ran = true
                    var inner = FetchRequest<AwakeRow>()
                    inner.returnsObjectsAsFaults = false
                    _ = try? context.fetch(inner)
                }
                defer { AwakeRow.onInit = nil }
                var request = FetchRequest<AwakeRow>()  // no sort key: no probe object runs the hook first
                request.returnsObjectsAsFaults = false
                let rows = try context.fetch(request).sorted { $0.n < $1.n }
                AwakeRow.onInit = nil
                #expect(rows.map(\.n) == [1, 2, 3])
                #expect(rows.map(\.awakenings) == [1, 1, 1])
            }
        }
    }

    /// The object a fetch makes for a row and then discards (the row's object was registered
    /// while the row was read, here by the object's initializer) keeps readable values: its
    /// `deinit` reads one.
    @Test func aDiscardedDuplicateKeepsReadableValues() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [KeptPassport.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let passport = try #require(model.entitiesByName["KeptPassport"])
        let p = try #require(try insertObjects(coordinator, [rowInsert(passport, ["number": .text("P1")])]).first)
        KeptPassport.numbersAtDeinit = []
        do {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let registrar = FaultRegistrar([p], in: context)
                KeptPassport.onInit = registrar.hook
                defer { KeptPassport.onInit = nil }
                var request = FetchRequest<KeptPassport>()
                request.returnsObjectsAsFaults = false
                let found = try context.fetch(request)
                KeptPassport.onInit = nil
                #expect(found.first?.number == "P1")
                #expect(found.first === registrar.faults.first)
                #expect(KeptPassport.numbersAtDeinit == [""])  // the discarded copy: initial values
            }
        }
        #expect(KeptPassport.numbersAtDeinit.sorted() == ["", "P1"])
    }

    @Test func aFailedFetchLeavesTheIdentityMapAsItWas() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for i in 0..<5 {
                let c = Circle(context: context)
                c.label = "c\(i)"
                c.radius = Double(i)
            }
            try context.save()
            context.reset()
            let town = Town(context: context)
            town.name = "Rome"
            try context.save()
        }
        // The last circle's row names an entity outside the hierarchy.
        let raw = try SQLiteConnection(location: .file(dir.file("store.sqlite").path))
        try raw.execute("UPDATE \"Shape\" SET Z_ENT = 999 WHERE Z_PK = (SELECT max(Z_PK) FROM \"Shape\")")
        try context.performAndWait {
            let before = context.registeredObjects
            #expect(before.count == 1)
            #expect(throws: CoherenceError.self) { try context.fetch(FetchRequest<Shape>(sortBy: [SortDescriptor(\.label)])) }
            #expect(context.registeredObjects == before)
            context.registered._checkInvariants()
            // The map still works: the town is found, and good rows still fetch.
            let towns = try context.fetch(FetchRequest<Town>())
            let circles = try context.fetch(FetchRequest<Circle>(predicate: #Predicate { $0.radius < 2 }))
            #expect(towns.first === before.first)
            #expect(circles.count == 2)
        }
    }
}
