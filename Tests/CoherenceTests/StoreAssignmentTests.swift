import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// `ManagedObjectContext.assign(_:to:)`: with several stores holding an entity, a new object goes
/// to the store it is assigned to, and otherwise to the first attached store holding its entity.
@Suite("Assigning new objects to stores")
struct StoreAssignmentTests {
    /// Two stores holding every entity: a.sqlite first, then `secondType` (b.sqlite when SQLite).
    private static func twoStores(_ secondType: StoreType, in dir: TemporaryDirectory)
        throws -> (PersistentStoreCoordinator, first: PersistentStore, second: PersistentStore)
    {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let first = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("a.sqlite"))
        let second = try coordinator.addPersistentStore(type: secondType, at: try dir.storeURL(secondType, "b"))
        return (coordinator, first, second)
    }

    /// The names of the objects of `entity` in one SQLite file, read by a new coordinator with
    /// only that store.
    private static func names(_ entity: String = "Town", in file: URL) throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .sqlite, at: file)
        return try coordinator.fetchDictionaries(FetchRequest<ManagedObject>(entityName: entity)).compactMap { $0["name"] as? String }
            .sorted()
    }

    /// A new town in `context`, assigned to `store` when one is given.
    private static func town(_ name: String, in context: ManagedObjectContext, assignedTo store: PersistentStore? = nil) throws -> Town {
        let town = Town(context: context)
        town.name = name
        if let store { try context.assign(town, to: store) }
        return town
    }

    /// A fetch across two stores asks each for its first `limit + offset` rows: a limit near
    /// `Int.max` with an offset means every row (the sum saturates instead of overflowing).
    @Test func aHugeLimitWithAnOffsetAcrossTwoStoresSkipsTheOffset() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, _, second) = try Self.twoStores(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            _ = try Self.town("Bergen", in: context, assignedTo: second)
            _ = try Self.town("Oslo", in: context)
            try context.save()
            let request = FetchRequest<Town>(sortBy: [SortDescriptor(\.name)], fetchLimit: .max, fetchOffset: 1)
            #expect(try context.fetch(request).map(\.name) == ["Oslo"])
            #expect(try context.count(for: request) == 1)
            #expect(try context.fetch(FetchRequest<Town>(fetchLimit: .max, fetchOffset: .max)).isEmpty)
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func anAssignedObjectIsSavedInItsStoreAndOthersInTheFirst(_ secondType: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (coordinator, first, second) = try Self.twoStores(secondType, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let assigned = try Self.town("Bergen", in: context, assignedTo: second)
            let unassigned = try Self.town("Oslo", in: context)
            try context.save()
            #expect(assigned.objectID.storeIdentifier == second.identifier)
            #expect(unassigned.objectID.storeIdentifier == first.identifier)
        }
        #expect(try Self.names(in: dir.file("a.sqlite")) == ["Oslo"])
        if secondType == .sqlite {
            #expect(try Self.names(in: dir.file("b.sqlite")) == ["Bergen"])
        }
        #expect(
            Set(try coordinator.fetchObjectIDs(FetchRequest<Town>()).compactMap(\.storeIdentifier)) == [first.identifier, second.identifier]
        )
    }

    /// A related object does not follow its destination's store: unassigned, it goes to the
    /// first store, and the save fails as relating two stores; assigned too, both are saved.
    @Test func aRelatedObjectIsAssignedOnItsOwn() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, _, second) = try Self.twoStores(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let town = try Self.town("Bergen", in: context, assignedTo: second)
            let person = Person(context: context)
            person.name = "Ada"
            person.town = town
            do {
                try context.save()
                Issue.record("a person in the first store was related to a town in the second")
            } catch let error as CoherenceError {
                #expect(error.code == .crossStoreRelationship)
                #expect(error.entityName == "Person" && error.propertyName == "town")
            }
            try context.assign(person, to: second)
            try context.save()
            #expect(person.objectID.storeIdentifier == second.identifier)
        }
        #expect(try Self.names(in: dir.file("a.sqlite")).isEmpty && Self.names("Person", in: dir.file("a.sqlite")).isEmpty)
        #expect(try Self.names(in: dir.file("b.sqlite")) == ["Bergen"])
        #expect(try Self.names("Person", in: dir.file("b.sqlite")) == ["Ada"])
    }

    @Test func permanentIDsAndChildContextsFollowTheAssignment() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, first, second) = try Self.twoStores(.sqlite, in: dir)
        let root = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: root)
        let early = try child.performAndWait {
            let town = try Self.town("Early", in: child, assignedTo: second)
            try child.obtainPermanentIDs(for: [town])
            #expect(town.objectID.storeIdentifier == second.identifier)
            _ = try Self.town("Pushed", in: child, assignedTo: second)
            _ = try Self.town("Plain", in: child)
            try child.save()
            return town.objectID
        }
        try root.performAndWait { try root.save() }
        #expect(early.storeIdentifier == second.identifier)
        #expect(try Self.names(in: dir.file("a.sqlite")) == ["Plain"])
        #expect(try Self.names(in: dir.file("b.sqlite")) == ["Early", "Pushed"])
        #expect(first != second)
    }

    @Test func badAssignmentsAreTypedErrors() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, first, second) = try Self.twoStores(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let stranger = other.performAndWait { Town(context: other) }
        // A store of another coordinator, and one whose configuration has no Town.
        let elsewhere = try makeCoordinator(.inMemory, in: dir).persistentStores[0]
        let clubsModel = try ManagedObjectModel(types: [Person.self, Town.self, Club.self], configurations: ["Clubs": ["Club"]])
        let clubsCoordinator = PersistentStoreCoordinator(managedObjectModel: clubsModel)
        let clubs = try clubsCoordinator.addPersistentStore(type: .inMemory, configuration: "Clubs")
        try clubsCoordinator.addPersistentStore(type: .inMemory)
        let clubsContext = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: clubsCoordinator)

        func expectError(_ code: CoherenceError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("no error", sourceLocation: sourceLocation)
            } catch let error as CoherenceError {
                #expect(error.code == code, sourceLocation: sourceLocation)
                #expect(error.entityName == "Town", sourceLocation: sourceLocation)
            } catch {
                Issue.record("\(error)", sourceLocation: sourceLocation)
            }
        }
        try context.performAndWait {
            expectError(.contextMismatch) { try context.assign(stranger, to: second) }
            let saved = try Self.town("Saved", in: context)
            try context.save()
            expectError(.invalidRequest) { try context.assign(saved, to: second) }
            let early = try Self.town("Early", in: context)
            try context.obtainPermanentIDs(for: [early])
            expectError(.invalidRequest) { try context.assign(early, to: second) }
            let fresh = try Self.town("Fresh", in: context)
            expectError(.storeNotAttached) { try context.assign(fresh, to: elsewhere) }
            context.rollback()
        }
        clubsContext.performAndWait {
            let town = Town(context: clubsContext)
            expectError(.noStoreForEntity) { try clubsContext.assign(town, to: clubs) }
        }
        // A store removed after the assignment: the save fails and writes nothing.
        try context.performAndWait {
            _ = try Self.town("Orphan", in: context, assignedTo: second)
            _ = try Self.town("Kept", in: context)
            try coordinator.remove(second)
            expectError(.storeNotAttached) { try context.save() }
            #expect(context.hasChanges)
        }
        #expect(try Self.names(in: dir.file("a.sqlite")) == ["Saved"])
        #expect(first != second)
    }
}
