import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Behaviour of contexts against real SQLite files: conflicts and merge policies, uniqueness
// constraints. More in ContextBehaviourTests+Graph.swift and ContextBehaviourTests+Events.swift.

// MARK: Helpers shared by the context behaviour tests

/// Collects values from any thread (notification observers, concurrent tasks).
final class Collector<T: Sendable>: Sendable {
    private let items = LockedValue<[T]>([])
    func append(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
    func removeAll() { items.withLock { $0.removeAll() } }
}

/// A Person's stored attributes, as a Sendable value to compare.
struct PersonValues: Equatable, Sendable, CustomStringConvertible {
    var name: String
    var age: Int
    var score: Double
    var email: String?
    var town: String?
    var description: String { "(\(name), \(age), \(score), \(email ?? "nil"), \(town ?? "no town"))" }
}

extension Person {
    var values: PersonValues { PersonValues(name: name, age: age, score: score, email: email, town: town?.name) }
}

/// A new coordinator on the same SQLite file (or PostgreSQL schema): what it reads is what is
/// stored (no shared row cache).
func reopen(_ coordinator: PersistentStoreCoordinator) throws -> PersistentStoreCoordinator {
    let fresh = PersistentStoreCoordinator(managedObjectModel: coordinator.managedObjectModel)
    let store = try #require(coordinator.persistentStores.first)
    try fresh.addPersistentStore(type: store.type, at: try #require(store.url))
    return fresh
}

/// The store types whose stores outlive their coordinator: SQLite, and PostgreSQL when its
/// tests are enabled.
let storedTypes = PostgreSQLTestServer.storeTypes.filter { $0 != .inMemory }

/// A Person's values as stored on disk, or nil when the row does not exist.
func storedPerson(_ coordinator: PersistentStoreCoordinator, _ id: ObjectID) async throws -> PersonValues? {
    let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator), name: "reader")
    return await reader.perform { (try? reader.existingObject(with: id) as? Person)?.values }
}

/// Saves a context and returns the error, if any.
func trySave(_ context: ManagedObjectContext) async -> CoherenceError? {
    await context.perform { () -> CoherenceError? in
        do throws(CoherenceError) {
            try context.save()
            return nil
        } catch {
            return error
        }
    }
}

/// Two private contexts on one coordinator that both loaded Ada (name "Ada", age 30, score 1,
/// email nil, town Oslo). The first changed name, age, email and town (to Rome) and saved; the
/// second changed name and score and has not saved yet.
struct VersionConflict {
    let coordinator: PersistentStoreCoordinator
    let first: ManagedObjectContext
    let second: ManagedObjectContext
    let id: ObjectID

    static let original = PersonValues(name: "Ada", age: 30, score: 1, email: nil, town: "Oslo")
    static let afterFirst = PersonValues(name: "First", age: 31, score: 1, email: "first@example.com", town: "Rome")

    init(_ dir: TemporaryDirectory, secondPolicy: MergePolicy, type: StoreType = .sqlite) async throws {
        coordinator = try makeCoordinator(type, in: dir)
        let setup = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "setup")
        id = try await setup.perform {
            let ada = Person(context: setup)
            ada.name = "Ada"
            ada.age = 30
            ada.score = 1
            let oslo = Town(context: setup)
            oslo.name = "Oslo"
            let rome = Town(context: setup)
            rome.name = "Rome"
            ada.town = oslo
            try setup.save()
            return ada.objectID
        }
        first = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "first")
        second = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "second")
        second.mergePolicy = secondPolicy
        let id = self.id, first = self.first, second = self.second
        let loaded1 = try await first.perform { try #require(first.existingObject(with: id) as? Person).values }
        let loaded2 = try await second.perform { try #require(second.existingObject(with: id) as? Person).values }
        #expect(loaded1 == Self.original && loaded2 == Self.original)
        try await first.perform {
            let ada = try #require(first.registeredObject(for: id) as? Person)
            ada.name = "First"  // both change name
            ada.age = 31  // only the first changes age
            ada.email = "first@example.com"  // only the first changes email (nil before)
            ada.town = try first.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Rome" })).first  // and the town
            try first.save()
        }
        try await second.perform {
            let ada = try #require(second.registeredObject(for: id) as? Person)
            ada.name = "Second"  // both change name
            ada.score = 2.5  // only the second changes score
        }
    }

    /// The second context's object, as it is in memory now.
    func secondObject() async -> (values: PersonValues?, hasChanges: Bool, isFault: Bool) {
        let second = self.second, id = self.id
        return await second.perform {
            let p = second.registeredObject(for: id) as? Person
            return (p?.values, second.hasChanges, p?.isFault ?? true)
        }
    }

    /// After resolving, the second context builds on the stored row: a further save with the
    /// `.error` policy has no conflict.
    func saveAgainWithoutConflict() async throws {
        let second = self.second, id = self.id
        second.mergePolicy = .error
        let error = await second.perform { () -> CoherenceError? in
            guard let p = second.registeredObject(for: id) as? Person else { return CoherenceError(.objectNotFound, "gone") }
            p.createdAt = Date(timeIntervalSince1970: 1_000)
            do throws(CoherenceError) { try second.save() } catch { return error }
            return nil
        }
        #expect(error == nil, "a save after the conflict was resolved failed: \(String(describing: error))")
    }
}

// MARK: Version conflicts, once per merge policy

@Suite("Context behaviour: merge policies")
struct ContextBehaviourMergePolicyTests {
    @Test(arguments: storedTypes) func errorPolicyThrowsWithEverySnapshotAndKeepsChanges(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await VersionConflict(dir, secondPolicy: .error, type: type)
        let error = try #require(await trySave(setup.second))
        #expect(error.code == .conflict)
        #expect(error.conflicts.count == 1)
        let conflict = try #require(error.conflicts.first)
        #expect(conflict.kind == .version)
        #expect(conflict.objectID == setup.id)
        #expect(conflict.oldVersion == 1)
        #expect(conflict.newVersion == 2)
        // What the second tried to write.
        #expect(conflict.objectSnapshot["name"] == .text("Second"))
        #expect(conflict.objectSnapshot["score"] == .real(2.5))
        #expect(conflict.objectSnapshot["age"] == .integer(30))
        // What it loaded.
        #expect(conflict.cachedSnapshot?["name"] == .text("Ada"))
        #expect(conflict.cachedSnapshot?["score"] == .real(1))
        // What the store has now.
        #expect(conflict.persistedSnapshot?["name"] == .text("First"))
        #expect(conflict.persistedSnapshot?["age"] == .integer(31))
        #expect(conflict.persistedSnapshot?["email"] == .text("first@example.com"))
        // Nothing written; the second context's changes are intact.
        #expect(try await storedPerson(setup.coordinator, setup.id) == VersionConflict.afterFirst)
        let second = await setup.secondObject()
        #expect(second.values == PersonValues(name: "Second", age: 30, score: 2.5, email: nil, town: "Oslo"))
        #expect(second.hasChanges)
        let changed = await setup.second.perform { () -> Set<String> in
            Set((setup.second.registeredObject(for: setup.id)?.changedValues() ?? [:]).keys)
        }
        #expect(changed == ["name", "score"])
    }

    @Test(arguments: storedTypes) func mergeByPropertyStoreTrump(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await VersionConflict(dir, secondPolicy: .mergeByPropertyStoreTrump, type: type)
        let error = await trySave(setup.second)
        #expect(error == nil)
        // name: both changed → store; age, email, town: only the first → first; score: only the second → second.
        let expected = PersonValues(name: "First", age: 31, score: 2.5, email: "first@example.com", town: "Rome")
        let second = await setup.secondObject()
        #expect(second.values == expected)
        #expect(!second.hasChanges)
        #expect(try await storedPerson(setup.coordinator, setup.id) == expected)
        try await setup.saveAgainWithoutConflict()
    }

    @Test(arguments: storedTypes) func mergeByPropertyObjectTrump(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await VersionConflict(dir, secondPolicy: .mergeByPropertyObjectTrump, type: type)
        let error = await trySave(setup.second)
        #expect(error == nil)
        // name: both changed → the second's; the rest merged property by property.
        let expected = PersonValues(name: "Second", age: 31, score: 2.5, email: "first@example.com", town: "Rome")
        let second = await setup.secondObject()
        #expect(second.values == expected)
        #expect(!second.hasChanges)
        #expect(try await storedPerson(setup.coordinator, setup.id) == expected)
        try await setup.saveAgainWithoutConflict()
    }

    @Test(arguments: storedTypes) func overwriteWritesTheWholeObject(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await VersionConflict(dir, secondPolicy: .overwrite, type: type)
        let error = await trySave(setup.second)
        #expect(error == nil)
        // The second's whole object, including age, email and town that only the first changed.
        let expected = PersonValues(name: "Second", age: 30, score: 2.5, email: nil, town: "Oslo")
        let second = await setup.secondObject()
        #expect(second.values == expected)
        #expect(!second.hasChanges)
        #expect(try await storedPerson(setup.coordinator, setup.id) == expected)
        try await setup.saveAgainWithoutConflict()
    }

    @Test(arguments: storedTypes) func rollbackDropsTheObjectsChanges(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await VersionConflict(dir, secondPolicy: .rollback, type: type)
        let error = await trySave(setup.second)
        #expect(error == nil)
        let second = await setup.secondObject()
        #expect(second.values == VersionConflict.afterFirst)
        #expect(!second.hasChanges)
        #expect(try await storedPerson(setup.coordinator, setup.id) == VersionConflict.afterFirst)
        try await setup.saveAgainWithoutConflict()
    }

    @Test(arguments: storedTypes) func conflictWithARowDeletedByAnotherContext(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await VersionConflict(dir, secondPolicy: .error, type: type)
        let first = setup.first, id = setup.id
        try await first.perform {
            first.delete(try #require(first.registeredObject(for: id)))
            try first.save()
        }
        // .error: the conflict says the row is gone (new version 0, no persisted snapshot).
        let error = try #require(await trySave(setup.second))
        #expect(error.code == .conflict)
        let conflict = try #require(error.conflicts.first)
        #expect(conflict.objectID == id)
        #expect(conflict.newVersion == 0)
        #expect(conflict.oldVersion == 1)
        #expect(conflict.persistedSnapshot == nil)
        #expect(conflict.objectSnapshot["name"] == .text("Second"))
        #expect(await setup.secondObject().hasChanges)
        // Any other policy: the object's changes cannot be written; it leaves the context.
        setup.second.mergePolicy = .mergeByPropertyObjectTrump
        #expect(await trySave(setup.second) == nil)
        let second = setup.second
        let state = await second.perform { (second.registeredObject(for: id) == nil, second.hasChanges) }
        #expect(state.0 && !state.1)
        #expect(try await storedPerson(setup.coordinator, id) == nil)
        let count = try await second.perform { try second.count(for: FetchRequest<Person>()) }
        #expect(count == 0)
    }

    @Test(arguments: storedTypes) func errorPolicyListsEveryConflict(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let (adaID, bobID) = try await ContextBehaviourFaultTests.seed(coordinator)
        let first = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let second = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        for context in [first, second] {
            try await context.perform {
                for id in [adaID, bobID] { _ = try #require(context.existingObject(with: id) as? Person).name }
            }
        }
        try await first.perform {
            for id in [adaID, bobID] { (first.registeredObject(for: id) as? Person)?.age += 1 }
            try first.save()
        }
        await second.perform {
            for id in [adaID, bobID] { (second.registeredObject(for: id) as? Person)?.name += "!" }
            let extra = Person(context: second)  // an unrelated insert is not written either
            extra.name = "Extra"
        }
        let error = try #require(await trySave(second))
        #expect(error.code == .conflict)
        #expect(Set(error.conflicts.map(\.objectID)) == [adaID, bobID])
        #expect(error.conflicts.allSatisfy { $0.oldVersion == 1 && $0.newVersion == 2 })
        #expect(try reopen(coordinator).count(for: FetchRequest<Person>()) == 2)
    }

    @Test(arguments: storedTypes) func deletingARowAnotherContextUpdatedIsAConflict(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await VersionConflict(dir, secondPolicy: .error, type: type)
        let second = setup.second, id = setup.id
        await second.perform {
            second.rollback()
            if let p = second.registeredObject(for: id) { second.delete(p) }
        }
        let error = try #require(await trySave(second))
        #expect(error.conflicts.first?.objectID == id)
        #expect(error.conflicts.first?.newVersion == 2)
        #expect(try await storedPerson(setup.coordinator, id) == VersionConflict.afterFirst)
        // Object trump: the delete wins.
        second.mergePolicy = .mergeByPropertyObjectTrump
        #expect(await trySave(second) == nil)
        #expect(try await storedPerson(setup.coordinator, id) == nil)
    }
}

// MARK: A custom merge policy

/// Takes the larger age where both sides changed it; everything else as object trump.
final class MaxAgePolicy: MergePolicy, @unchecked Sendable {
    let received = Collector<SaveConflict>()
    let calls = Collector<Bool>()

    init() { super.init(basedOn: .mergeByPropertyObjectTrump) }

    override func resolve(conflicts: [SaveConflict], in context: ManagedObjectContext) throws {
        calls.append(context.isOnExecutor)
        for c in conflicts { received.append(c) }
        for c in conflicts {
            guard let p = context.registeredObject(for: c.objectID) as? Person,
                case .integer(let stored)? = c.persistedSnapshot?["age"]
            else { continue }
            p.age = max(p.age, Int(stored))
        }
        try super.resolve(conflicts: conflicts, in: context)
    }
}

@Suite("Context behaviour: custom merge policy")
struct ContextBehaviourCustomPolicyTests {
    @Test(arguments: [(40, 35, 40), (33, 35, 35)])
    func customPolicyTakesTheMaximum(_ firstAge: Int, _ secondAge: Int, _ expectedAge: Int) async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let setup = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let id = try await setup.perform {
            let p = Person(context: setup)
            p.name = "Ada"
            p.age = 30
            try setup.save()
            return p.objectID
        }
        let policy = MaxAgePolicy()
        let first = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let second = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        second.mergePolicy = policy
        try await second.perform { _ = try #require(second.existingObject(with: id) as? Person).age }
        try await first.perform {
            let p = try #require(first.existingObject(with: id) as? Person)
            p.age = firstAge
            try first.save()
        }
        try await second.perform {
            let p = try #require(second.registeredObject(for: id) as? Person)
            p.age = secondAge
            p.name = "Second"
        }
        #expect(await trySave(second) == nil)
        #expect(policy.calls.all == [true])  // called once, on the context's executor
        let conflict = try #require(policy.received.all.first)
        #expect(policy.received.count == 1)
        #expect(conflict.objectID == id)
        #expect(conflict.kind == .version)
        #expect(conflict.persistedSnapshot?["age"] == .integer(Int64(firstAge)))
        #expect(conflict.objectSnapshot["age"] == .integer(Int64(secondAge)))
        let stored = try #require(try await storedPerson(coordinator, id))
        #expect(stored.age == expectedAge)
        #expect(stored.name == "Second")
    }
}

// MARK: Uniqueness constraints

@Suite("Context behaviour: uniqueness")
struct ContextBehaviourUniquenessTests {
    /// Oslo (population 100) is saved by one context; another context, which never saw it,
    /// inserts Oslo (population 200) with `policy`.
    struct Setup {
        let coordinator: PersistentStoreCoordinator
        let context: ManagedObjectContext
        let storedID: ObjectID

        init(_ dir: TemporaryDirectory, policy: MergePolicy, type: StoreType = .sqlite) async throws {
            coordinator = try makeCoordinator(type, in: dir)
            let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "other")
            storedID = try await other.perform {
                let oslo = Town(context: other)
                oslo.name = "Oslo"
                oslo.population = 100
                let rome = Town(context: other)
                rome.name = "Rome"
                try other.save()
                return oslo.objectID
            }
            context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "mine")
            context.mergePolicy = policy
        }

        /// Inserts Oslo (200) and returns its temporary ID.
        func insertOslo() async -> ObjectID {
            let context = self.context
            return await context.perform {
                let oslo = Town(context: context)
                oslo.name = "Oslo"
                oslo.population = 200
                return oslo.objectID
            }
        }

        /// The towns on disk: name → population.
        func storedTowns() async throws -> [String: Int] {
            let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
            return try await reader.perform {
                Dictionary(try reader.fetch(FetchRequest<Town>()).map { ($0.name, $0.population) }, uniquingKeysWith: { a, _ in a })
            }
        }

        func storedTownCount() throws -> Int { try reopen(coordinator).count(for: FetchRequest<Town>()) }
    }

    @Test(arguments: storedTypes) func errorPolicyReportsTheConstraint(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await Setup(dir, policy: .error, type: type)
        let tempID = await setup.insertOslo()
        let error = try #require(await trySave(setup.context))
        #expect(error.code == .conflict)
        let conflict = try #require(error.conflicts.first)
        #expect(error.conflicts.count == 1)
        #expect(conflict.kind == .uniqueness)
        #expect(conflict.constraint == ["name"])
        #expect(conflict.conflictingObjectIDs == [setup.storedID])
        #expect(conflict.objectID == tempID, "the conflict should name the inserted object (\(tempID)), not \(conflict.objectID)")
        #expect(conflict.persistedSnapshot?["population"] == .integer(100))
        #expect(conflict.objectSnapshot["population"] == .integer(200))
        #expect(try setup.storedTownCount() == 2)
        #expect(try await setup.storedTowns()["Oslo"] == 100)
        let context = setup.context
        let state = await context.perform { (context.insertedObjects.count, context.registeredObject(for: tempID)?.isInserted) }
        #expect(state.0 == 1 && state.1 == true)
    }

    @Test(arguments: storedTypes) func objectTrumpUpserts(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await Setup(dir, policy: .mergeByPropertyObjectTrump, type: type)
        let context = setup.context, storedID = setup.storedID
        try await context.perform {
            let oslo = Town(context: context)
            oslo.name = "Oslo"
            oslo.population = 200
            let tempID = oslo.objectID
            try context.save()
            // The inserted object itself now stands for the stored row.
            #expect(oslo.objectID == storedID)
            #expect(!oslo.isInserted && !oslo.hasChanges)
            #expect(oslo.population == 200)
            #expect(context.registeredObject(for: storedID) === oslo)
            #expect(context.registeredObject(for: tempID) == nil)
            #expect(!context.hasChanges)
            let fetched = try context.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Oslo" }))
            #expect(fetched.count == 1 && fetched.first === oslo)
        }
        #expect(try setup.storedTownCount() == 2)
        #expect(try await setup.storedTowns()["Oslo"] == 200)
    }

    @Test(arguments: storedTypes) func objectTrumpUpsertReplacesARegisteredCopyOfTheRow(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await Setup(dir, policy: .mergeByPropertyObjectTrump, type: type)
        let context = setup.context, storedID = setup.storedID
        try await context.perform {
            let loaded = try #require(context.existingObject(with: storedID) as? Town)
            #expect(loaded.population == 100)
            let oslo = Town(context: context)
            oslo.name = "Oslo"
            oslo.population = 300
            try context.save()
            #expect(oslo.objectID == storedID)
            #expect(context.registeredObject(for: storedID) === oslo)  // one object per row
            #expect(try context.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Oslo" })).count == 1)
        }
        #expect(try await setup.storedTowns()["Oslo"] == 300)
    }

    @Test(arguments: storedTypes) func storeTrumpKeepsTheStoredValues(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let setup = try await Setup(dir, policy: .mergeByPropertyStoreTrump, type: type)
        _ = await setup.insertOslo()
        let context = setup.context
        #expect(await trySave(context) == nil)
        #expect(try setup.storedTownCount() == 2)
        #expect(try await setup.storedTowns()["Oslo"] == 100)
        let state = await context.perform { () -> (ObjectID?, Int?, Bool, Bool?) in
            let o = context.registeredObject(for: setup.storedID) as? Town
            return (o?.objectID, o?.population, context.hasChanges, o?.isInserted)
        }
        #expect(state.0 == setup.storedID)
        #expect(state.1 == 100)
        #expect(!state.2)
        #expect(state.3 == false)
    }
}
