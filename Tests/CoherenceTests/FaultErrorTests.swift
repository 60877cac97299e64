import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Collects the errors a context reports: load errors (its load-error hook) and errors met
/// while merging (its propagation error hook, called on a global queue).
final class ReportedErrors: Sendable {
    private let errors = LockedValue<[CoherenceError]>([])
    private let arrived = DispatchSemaphore(value: 0)

    /// Installs the recorder as `context`'s load-error hook.
    func watch(_ context: ManagedObjectContext) {
        context.hooks.loadErrorObserver = { [self] error in record(error) }
        context.hooks.errorHandler = { [self] error in
            record(error as? CoherenceError ?? CoherenceError(.invalidRequest, "\(error)"))
        }
    }

    private func record(_ error: CoherenceError) {
        errors.withLock { $0.append(error) }
        arrived.signal()
    }

    /// Waits until `count` errors arrived (or gives up after a minute, so a missing report
    /// fails the test instead of hanging it) and returns every error so far.
    func wait(for count: Int) -> [CoherenceError] {
        var received = 0
        while received < count, arrived.wait(timeout: .now() + testGuardSeconds) == .success { received += 1 }
        return errors.withLock { $0 }
    }
}

/// Faults whose rows cannot be read (store detached, damaged file) fail loudly: the object
/// stays a fault, the error is kept, thrown and reported, and edits are never dropped.
@Suite("Faults that cannot be filled")
struct FaultErrorTests {
    /// A SQLite store holding Paris with Ada (30) and Bob (40), and a context on it whose
    /// reported errors are collected.
    final class Fixture {
        let dir: TemporaryDirectory
        let url: URL
        let coordinator: PersistentStoreCoordinator
        let ada: ObjectID
        let paris: ObjectID
        let context: ManagedObjectContext
        let reported = ReportedErrors()

        init(_ name: String = #function) throws {
            dir = try TemporaryDirectory(name)
            url = dir.file("store.sqlite")
            coordinator = try makeCoordinator(.sqlite, in: dir)
            let seed = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "seed")
            (ada, paris) = try seed.performAndWait {
                let paris = Town(context: seed)
                paris.name = "Paris"
                for (name, age) in [("Ada", 30), ("Bob", 40)] {
                    let p = Person(context: seed)
                    p.name = name
                    p.age = age
                    p.town = paris
                }
                try seed.save()
                let ada = try #require(try seed.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "Ada" })).first)
                return (ada.objectID, paris.objectID)
            }
            context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            reported.watch(context)
        }

        /// Detaches the store (the objects' rows cannot be read).
        func detach() throws { try coordinator.remove(try #require(coordinator.persistentStores.first)) }
        /// Attaches the same file again.
        func reattach() throws { try coordinator.addPersistentStore(type: .sqlite, at: url) }

        /// Each person's stored town, read through a new context.
        func storedTowns() throws -> [String: String?] {
            let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            return try reader.performAndWait {
                Dictionary(uniqueKeysWithValues: try reader.fetch(FetchRequest<Person>()).map { ($0.name, $0.town?.name) })
            }
        }

        /// Ada's stored name, age and score, read through a new coordinator.
        func storedAda() throws -> (name: String, age: Int, score: Double) {
            let other = PersistentStoreCoordinator(managedObjectModel: coordinator.managedObjectModel)
            try other.addPersistentStore(type: .sqlite, at: url)
            let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: other)
            return try reader.performAndWait {
                let ada = try #require(try reader.existingObject(with: self.ada) as? Person)
                return (ada.name, ada.age, ada.score)
            }
        }
    }

    @Test func aFaultOfADetachedStoreKeepsItsErrorAndEditUntilTheStoreIsBack() throws {
        let f = try Fixture()
        let context = f.context
        try context.performAndWait {
            let ada = try #require(context.object(with: f.ada) as? Person)
            try f.detach()

            // Reading gives no data: the object stays a fault and the error is kept and thrown.
            _ = ada.name
            #expect(ada.isFault)
            let error = #expect(throws: CoherenceError.self) { try ada.fulfillFault() }
            #expect(error?.code == .storeNotAttached)
            #expect(error?.objectID == f.ada)
            let existing = #expect(throws: CoherenceError.self) { try context.existingObject(with: f.ada) }
            #expect(existing?.code == .storeNotAttached, "not 'deleted': \(String(describing: existing))")

            // Edits are kept, also one to the default value; the save refuses, naming the object.
            ada.age = 0
            ada.score = 1.5
            #expect(ada.age == 0 && ada.score == 1.5)
            #expect(context.hasChanges)
            #expect(context.updatedObjects.contains(ada))
            let saveError = #expect(throws: CoherenceError.self) { try context.save() }
            #expect(saveError?.code == .storeNotAttached)
            #expect(saveError?.objectID == f.ada)
            #expect(context.hasChanges)

            // The store is back: the next access loads the row under the edits, and the save writes them.
            try f.reattach()
            #expect(ada.name == "Ada")
            #expect(!ada.isFault)
            #expect(ada.age == 0 && ada.score == 1.5)
            #expect(ada.changedValues().keys.sorted() == ["age", "score"])
            try context.save()
            #expect(!context.hasChanges)
        }
        let stored = try f.storedAda()
        #expect(stored.name == "Ada" && stored.age == 0 && stored.score == 1.5)
        #expect(f.reported.wait(for: 1).contains { $0.code == .storeNotAttached && $0.objectID == f.ada })
    }

    @Test func aFetchOrExistingObjectLoadsAnObjectWhoseLoadFailedAndKeepsItsEdit() throws {
        let f = try Fixture()
        let context = f.context
        try context.performAndWait {
            let ada = try #require(context.object(with: f.ada) as? Person)
            try f.detach()
            ada.age = 31
            try f.reattach()
            // A fetch returning faults fills it, with the edit on top.
            let fetched = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            #expect(fetched.first === ada)
            #expect(ada.age == 31 && ada.name == "Ada")
            #expect(ada.isUpdated)
            #expect(try context.existingObject(with: f.ada) === ada)
            try context.save()
        }
        #expect(try f.storedAda().age == 31)
    }

    @Test func rollbackAndRefreshDiscardTheEditsOfAnObjectThatCouldNotLoad() throws {
        let f = try Fixture()
        let context = f.context
        try context.performAndWait {
            let ada = try #require(context.object(with: f.ada) as? Person)
            let paris = try #require(context.object(with: f.paris) as? Town)
            try f.detach()
            ada.age = 99
            paris.population = 5
            context.rollback()
            context.refresh(paris, mergeChanges: false)
            #expect(!context.hasChanges)
            try f.reattach()
            #expect(ada.age == 30 && paris.population == 0 && paris.name == "Paris")
            #expect(!context.hasChanges)
        }
    }

    @Test func relationshipFaultsOfADetachedStoreStayFaultsAndLoadLater() throws {
        let f = try Fixture()
        let context = f.context
        try context.performAndWait {
            let ada = try #require(try context.existingObject(with: f.ada) as? Person)
            let paris = try #require(try context.existingObject(with: f.paris) as? Town)
            try f.detach()

            // To-many: not loaded, so not "empty" for good; the error is thrown on request.
            _ = paris.people
            let error = #expect(throws: CoherenceError.self) { try paris.fulfillFault(forRelationshipNamed: "people") }
            #expect(error?.code == .storeNotAttached)
            #expect(throws: CoherenceError.self) { try ada.fulfillFault(forRelationshipNamed: "nope") }
            try f.reattach()
            #expect(paris.people.map(\.name).sorted() == ["Ada", "Bob"])
            #expect(!context.hasChanges)
        }
        #expect(f.reported.wait(for: 1).contains { $0.code == .storeNotAttached && $0.objectID == f.paris && $0.propertyName == "people" })

        // To-one: the destination is known from Ada's row, but its data is not loaded.
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        try other.performAndWait {
            let ada = try #require(try other.existingObject(with: f.ada) as? Person)
            try f.detach()
            let town = try #require(ada.town)
            _ = town.population
            #expect(town.isFault)
            #expect(throws: CoherenceError.self) { try town.fulfillFault() }
            try ada.fulfillFault(forRelationshipNamed: "town")  // Ada's own row is loaded
            try f.reattach()
            #expect(ada.town?.name == "Paris")
            #expect(!other.hasChanges)
        }
    }

    @Test func aToManyReplacedWhileItCannotBeReadDropsTheOldMembersOnceItLoads() throws {
        let f = try Fixture()
        let context = f.context
        try context.performAndWait {
            let paris = try #require(try context.existingObject(with: f.paris) as? Town)
            try f.detach()
            paris.people = []
            #expect(throws: CoherenceError.self) { try context.save() }
            try f.reattach()
            #expect(paris.people.isEmpty)  // read now: Ada and Bob left
            #expect(context.hasChanges)
            try context.save()
        }
        #expect(try f.storedTowns() == ["Ada": nil, "Bob": nil])
        // Also when the save is what loads it (the members leaving are faults).
        let setup = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        try setup.performAndWait {
            let paris = try #require(try setup.existingObject(with: f.paris) as? Town)
            for p in try setup.fetch(FetchRequest<Person>()) { p.town = paris }
            try setup.save()
        }
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        try other.performAndWait {
            let paris = try #require(try other.existingObject(with: f.paris) as? Town)
            try f.detach()
            paris.people = []
            try f.reattach()
            try other.save()
        }
        #expect(try f.storedTowns() == ["Ada": nil, "Bob": nil])
    }

    @Test func aForeignKeyChangedOnAFaultThroughItsInverseIsSaved() throws {
        let f = try Fixture()
        try f.context.performAndWait {
            let paris = try #require(try f.context.existingObject(with: f.paris) as? Town)
            paris.people = []  // Ada and Bob are faults: their foreign keys change through the inverse
            try f.context.save()
        }
        #expect(try f.storedTowns() == ["Ada": nil, "Bob": nil])
    }

    @Test func aOneToOneKeptOnTheOtherSideStaysUnresolvedUntilItCanBeRead() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [MapOwner.self, MapPassport.self]))
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let ids: (owner: ObjectID, passport: ObjectID) = try context.performAndWait {
            let owner = MapOwner(context: context)
            owner.name = "Ada"
            let passport = MapPassport(context: context)
            passport.number = "P1"
            owner.passport = passport
            try context.save()
            return (owner.objectID, passport.objectID)
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let owner = try #require(try reader.existingObject(with: ids.owner) as? MapOwner)
            let passport = try #require(try reader.existingObject(with: ids.passport) as? MapPassport)
            // The side without the foreign key needs a query to resolve.
            let ownerSideHasKey = try #require(owner.entity.relationshipsByName["passport"]).hasForeignKey
            let (object, name): (ManagedObject, String) = ownerSideHasKey ? (passport, "owner") : (owner, "passport")
            try coordinator.remove(try #require(coordinator.persistentStores.first))
            #expect(ownerSideHasKey ? passport.owner == nil : owner.passport == nil)
            let error = #expect(throws: CoherenceError.self) { try object.fulfillFault(forRelationshipNamed: name) }
            #expect(error?.code == .storeNotAttached)
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            #expect(passport.owner === owner && owner.passport === passport)
            #expect(!reader.hasChanges)
        }
    }

    @Test func aDeleteWhoseRelationshipsCannotBeReadCompletesItsRulesAtSave() throws {
        let f = try Fixture()
        let context = f.context
        try context.performAndWait {
            let paris = try #require(try context.existingObject(with: f.paris) as? Town)
            try f.detach()
            // Town.people cascades, but the people cannot be read now.
            context.delete(paris)
            let error = #expect(throws: CoherenceError.self) { try context.save() }
            #expect(error?.code == .storeNotAttached)
            #expect(error?.objectID == f.paris)
            #expect(paris.isDeleted && context.hasChanges)
            try f.reattach()
            try context.save()
            #expect(try context.count(for: FetchRequest<Person>()) == 0)
            #expect(try context.count(for: FetchRequest<Town>()) == 0)
        }
    }

    @Test func refreshReportsAnErrorAndKeepsTheObject() throws {
        let f = try Fixture()
        let context = f.context
        try context.performAndWait {
            let ada = try #require(try context.existingObject(with: f.ada) as? Person)
            let paris = try #require(context.object(with: f.paris) as? Town)
            ada.age = 5
            try f.detach()
            context.refresh(ada, mergeChanges: true)
            context.refresh(paris, mergeChanges: true)
            #expect(ada.name == "Ada" && ada.age == 5 && !ada.isFault)
            #expect(paris.isFault)
            #expect(throws: CoherenceError.self) { try paris.fulfillFault() }
            try f.reattach()
            context.refresh(ada, mergeChanges: true)
            #expect(ada.name == "Ada" && ada.age == 5)
            #expect(paris.name == "Paris")
        }
        let errors = f.reported.wait(for: 2)
        #expect(errors.contains { $0.code == .storeNotAttached && $0.objectID == f.ada })
        #expect(errors.contains { $0.code == .storeNotAttached && $0.objectID == f.paris })
    }

    /// A coordinator with Ada in a.sqlite and Bob, in the Chess club, in b.sqlite (new objects
    /// go to the first store holding the entity).
    static func twoStores(_ dir: TemporaryDirectory) throws -> (
        PersistentStoreCoordinator, b: PersistentStore, ada: ObjectID, bob: ObjectID
    ) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        func insert(_ name: String, club: String?) throws -> ObjectID {
            try writer.performAndWait {
                let p = Person(context: writer)
                p.name = name
                if let club {
                    let c = Club(context: writer)
                    c.title = club
                    p.clubs = [c]
                }
                try writer.save()
                return p.objectID
            }
        }
        let a = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("a.sqlite"))
        let ada = try insert("Ada", club: "Chess")
        try coordinator.remove(a)
        let b = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("b.sqlite"))
        let bob = try insert("Bob", club: nil)
        try coordinator.addPersistentStore(type: .sqlite, at: dir.file("a.sqlite"))
        return (coordinator, b, ada, bob)
    }

    @Test func anObjectOfAnAttachedStoreLoadsWhenAnotherOfItsBatchCannot() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, b, adaID, bobID) = try Self.twoStores(dir)
        // Relationships load for a whole fetch: Bob's, of the store detached next, is in Ada's.
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let people = try reader.performAndWait { try reader.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])) }
        #expect(people.map(\.objectID) == [adaID, bobID])
        try coordinator.remove(b)
        reader.performAndWait { #expect(people[0].clubs.map(\.title) == ["Chess"]) }
        // Faults fill in batches: Bob's is in Ada's.
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let bob = try #require(context.object(with: bobID) as? Person)
            let ada = try #require(context.object(with: adaID) as? Person)
            #expect(ada.name == "Ada")
            #expect(bob.isFault)
        }
    }

    @Test func aMergeStillReloadsTheObjectsOfStoresThatAreAttached() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, b, adaID, bobID) = try Self.twoStores(dir)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let reported = ReportedErrors()
        reported.watch(view)
        let ada = try view.performAndWait {
            _ = try view.existingObject(with: bobID)
            return try #require(try view.existingObject(with: adaID) as? Person)
        }
        try writer.performAndWait {
            try #require(try writer.existingObject(with: adaID) as? Person).age = 36
            try #require(try writer.existingObject(with: bobID) as? Person).age = 37
            try writer.save()
        }
        try coordinator.remove(b)
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: ["updated": [adaID, bobID]], into: [view])
        view.performAndWait { #expect(ada.age == 36) }
        #expect(reported.wait(for: 1).contains { $0.code == .storeNotAttached })
    }

    @Test func aChildContextSeesTheErrorOfItsParent() throws {
        let f = try Fixture()
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: f.context)
        try f.detach()
        try child.performAndWait {
            let ada = try #require(child.object(with: f.ada) as? Person)
            let error = #expect(throws: CoherenceError.self) { try ada.fulfillFault() }
            #expect(error?.code == .storeNotAttached)
            #expect(throws: CoherenceError.self) { try child.existingObject(with: f.paris) }
            ada.age = 7
            #expect(throws: CoherenceError.self) { try child.save() }
            try f.reattach()
            #expect(ada.name == "Ada" && ada.age == 7)
            let paris = try #require(try child.existingObject(with: f.paris) as? Town)
            #expect(paris.people.count == 2)
            try child.save()
        }
        try f.context.performAndWait { try f.context.save() }
        #expect(try f.storedAda().age == 7)
    }

    @Test func aFaultWhoseContextWasResetStaysAFault() throws {
        let f = try Fixture()
        let ada: Person = try f.context.performAndWait {
            let ada = try #require(f.context.object(with: f.ada) as? Person)
            f.context.reset()
            return ada
        }
        _ = ada.name
        #expect(ada.isFault)
        let error = #expect(throws: CoherenceError.self) { try ada.fulfillFault() }
        #expect(error?.code == .invalidRequest)
    }

    @Test func aDeletedRowIsStillReportedAsDeleted() throws {
        let f = try Fixture()
        let context = f.context
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: f.coordinator)
        try context.performAndWait {
            let ada = try #require(context.object(with: f.ada) as? Person)
            try other.performAndWait {
                other.delete(try other.existingObject(with: f.ada))
                try other.save()
            }
            let error = #expect(throws: CoherenceError.self) { try ada.fulfillFault() }
            #expect(error?.code == .objectNotFound)
            #expect(throws: CoherenceError.self) { try context.existingObject(with: f.ada) }
        }
    }

    /// Detaches the store at `url` and overwrites the root page of `table` (not the schema)
    /// through a second handle, then attaches the store again.
    static func corruptTable(_ table: String, of coordinator: PersistentStoreCoordinator, at url: URL) throws {
        try coordinator.remove(try #require(coordinator.persistentStore(for: url)))  // closes it (and checkpoints the WAL)
        let (root, pageSize): (Int64, Int64) = try {
            let c = try SQLiteConnection(location: .file(url.path))
            let root = try c.prepare("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = '\(table)'").rows { $0.int64(0) }
                .first
            let size = try c.prepare("PRAGMA page_size").rows { $0.int64(0) }.first
            return (try #require(root), try #require(size))
        }()
        #expect(root > 1)
        let file = try FileHandle(forWritingTo: url)
        try file.seek(toOffset: UInt64((root - 1) * pageSize))
        try file.write(contentsOf: Data(repeating: 0xA5, count: Int(pageSize)))
        try file.close()
    }

    @Test func aDenyRuleWhoseDestinationsCannotBeReadRefusesTheDelete() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("teams.sqlite")
        let model = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Team",
                properties: [
                    AttributeDescription(name: "name", type: .string, defaultValue: ""),
                    RelationshipDescription(name: "members", destination: "Member", inverse: "team", isToMany: true, deleteRule: .deny)
                ]),
            EntityDescription(
                name: "Member",
                properties: [
                    AttributeDescription(name: "name", type: .string, defaultValue: ""),
                    RelationshipDescription(name: "team", destination: "Team", inverse: "members")
                ])
        ])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let teamID: ObjectID = try writer.performAndWait {
            let team = try writer.insertNewObject(forEntityName: "Team")
            let member = try writer.insertNewObject(forEntityName: "Member")
            let slot = try #require(member.entity.relationshipsByName["team"]?.slot)
            member._setRelatedObjects([team], at: slot)
            try writer.save()
            return team.objectID
        }
        try Self.corruptTable("Member", of: coordinator, at: url)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            context.delete(try context.existingObject(with: teamID))
            let error = #expect(throws: CoherenceError.self) { try context.save() }
            #expect(
                error?.underlyingErrors.contains { ($0 as? CoherenceError)?.objectID == teamID } == true, "\(String(describing: error))")
        }
        #expect(try coordinator.count(for: FetchRequest<ManagedObject>(entityName: "Team")) == 1)
    }

    @Test func aCorruptPageGivesATypedErrorNeverDefaults() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("store.sqlite")
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        // Enough rows for the table to span several pages.
        let ids: [ObjectID] = try writer.performAndWait {
            let people = (0..<300).map { n -> Person in
                let p = Person(context: writer)
                p.name = "Person \(n) " + String(repeating: "x", count: 100)
                return p
            }
            try writer.save()
            return people.map(\.objectID)
        }
        try Self.corruptTable("Person", of: coordinator, at: url)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let reported = ReportedErrors()
        reported.watch(context)
        try context.performAndWait {
            let person = try #require(context.object(with: ids[150]) as? Person)
            _ = person.name
            #expect(person.isFault)  // no data was read: the default it returned is not presented as the row's
            let error = #expect(throws: CoherenceError.self) { try person.fulfillFault() }
            #expect(error?.objectID == ids[150])
            // A read of an attached store: not an open failure.
            #expect(error?.code == .storeReadFailed)
            #expect(error?.store == url.path)
            #expect(error?.sql != nil)
            #expect(
                error?.underlyingErrors.contains { ($0 as? SQLiteError)?.resultCode == SQLiteError.corrupt } == true,
                "\(String(describing: error))")
            #expect(throws: CoherenceError.self) { try context.existingObject(with: ids[3]) }
            let fetchError = #expect(throws: CoherenceError.self) { try context.fetch(FetchRequest<Person>()) }
            #expect(fetchError?.code == .storeReadFailed)
        }
        #expect(reported.wait(for: 1).contains { $0.objectID == ids[150] })
    }
}
