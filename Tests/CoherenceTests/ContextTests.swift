import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A coordinator with a SQLite store and a private context on it.
func makeContext(_ dir: TemporaryDirectory, type: StoreType = .sqlite, name: String = "test") throws -> ManagedObjectContext {
    let coordinator = try makeCoordinator(type, in: dir)
    return ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: name)
}

@Suite("Managed object contexts")
struct ContextTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func insertSaveFetch(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir, type: type)
        let names = try await context.perform {
            let ada = Person(context: context)
            ada.name = "Ada"
            ada.age = 36
            let bob = Person(context: context)
            bob.name = "Bob"
            bob.age = 17
            #expect(ada.isInserted && ada.objectID.isTemporaryID)
            #expect(context.hasChanges)
            try context.save()
            #expect(!ada.isInserted && !ada.objectID.isTemporaryID)
            #expect(!context.hasChanges)
            let adults = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age >= 18 }))
            return adults.map(\.name)
        }
        #expect(names == ["Ada"])
        // A fresh context reads the saved data.
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let sorted = try await other.perform {
            try other.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name, order: .reverse)])).map { "\($0.name):\($0.age)" }
        }
        #expect(sorted == ["Bob:17", "Ada:36"])
    }

    /// Inserted objects are found by their temporary IDs (they are kept out of the identity map
    /// until they are saved, so this exercises the separate lookup).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func insertedObjectsAreFoundByTemporaryID(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir, type: type)
        try await context.perform {
            let a = Person(context: context)
            let tempA = a.objectID
            #expect(context.registeredObject(for: tempA) === a)
            #expect(context.object(with: tempA) === a)
            #expect(try context.existingObject(with: tempA) === a)
            // Objects inserted after the first lookup are found too.
            let b = Person(context: context)
            #expect(context.registeredObject(for: b.objectID) === b)
            #expect(context.registeredObjects == Set([a, b]))
            // A deleted inserted object is gone.
            let tempB = b.objectID
            context.delete(b)
            #expect(context.registeredObject(for: tempB) == nil)
            // After the save the object is registered under its permanent ID only.
            let town = Town(context: context)
            town.name = "Oslo"
            a.town = town
            try context.save()
            #expect(!a.objectID.isTemporaryID)
            #expect(context.registeredObject(for: a.objectID) === a)
            #expect(context.registeredObject(for: tempA) == nil)
            #expect(context.registeredObjects == Set([a, town]))
            #expect(a.town === town && town.people == Set([a]))
            // A merge-policy uniqueness conflict on an insert finds the inserted object.
            context.mergePolicy = .mergeByPropertyObjectTrump
            let townID = town.objectID
            let again = Town(context: context)
            again.name = "Oslo"
            again.population = 7
            try context.save()
            #expect(again.objectID == townID)
            #expect(context.registeredObject(for: townID) === again)
        }
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let towns = try await other.perform { try other.fetch(FetchRequest<Town>()).map { "\($0.name):\($0.population)" } }
        #expect(towns == ["Oslo:7"])
    }

    /// A child's inserted objects keep their temporary IDs in the child after it saves into
    /// the parent, and get the permanent IDs when the parent saves.
    @Test func childInsertsAreFoundUntilTheParentSaves() async throws {
        let dir = try TemporaryDirectory()
        let parent = try makeContext(dir)
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        let temp: ObjectID = try await child.perform {
            let p = Person(context: child)
            p.name = "Ada"
            try child.save()
            #expect(child.registeredObject(for: p.objectID) === p)
            #expect(!p.isInserted && p.objectID.isTemporaryID)
            return p.objectID
        }
        let permanent: ObjectID = try await parent.perform {
            let inParent = try #require(parent.registeredObject(for: temp) as? Person)
            #expect(inParent.isInserted && inParent.name == "Ada")
            try parent.save()
            return inParent.objectID
        }
        #expect(!permanent.isTemporaryID)
        let (seen, name) = await child.perform { () -> (ObjectID?, String?) in
            let o = child.registeredObject(for: permanent) as? Person
            return (o?.objectID, o?.name)
        }
        #expect(seen == permanent && name == "Ada")
    }

    @Test func identityMapAndUnchangedSets() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        try await context.perform {
            let p = Person(context: context)
            p.name = "Ada"
            try context.save()
            context.reset()
            let a = try context.fetch(FetchRequest<Person>())
            let b = try context.fetch(FetchRequest<Person>())
            #expect(a.count == 1 && a[0] === b[0])
            #expect(context.object(with: a[0].objectID) === a[0])
            #expect(context.registeredObject(for: a[0].objectID) === a[0])
            #expect(try context.existingObject(with: a[0].objectID) === a[0])
            a[0].name = "Ada"  // the value it already has
            #expect(!a[0].hasChanges)
            #expect(!context.hasChanges)
            #expect(context.updatedObjects.isEmpty)
            a[0].name = "Ada L."
            #expect(a[0].isUpdated)
            #expect(a[0].changedValues()["name"] as? String == "Ada L.")
            #expect(a[0].committedValues(forKeys: ["name"])["name"] as? String == "Ada")
            context.rollback()
            #expect(a[0].name == "Ada")
            #expect(!context.hasChanges)
        }
    }

    @Test func relationshipsKeepInversesInStep() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        let ids = try await context.perform {
            let oslo = Town(context: context)
            oslo.name = "Oslo"
            let rome = Town(context: context)
            rome.name = "Rome"
            let ada = Person(context: context)
            ada.name = "Ada"
            ada.town = oslo
            #expect(oslo.people == [ada])
            ada.town = rome
            #expect(oslo.people.isEmpty)
            #expect(rome.people == [ada])
            let chess = Club(context: context)
            chess.title = "Chess"
            chess.members.insert(ada)
            #expect(ada.clubs == [chess])
            try context.save()
            return (ada.objectID, rome.objectID, chess.objectID)
        }
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        try await fresh.perform {
            let ada = try #require(fresh.existingObject(with: ids.0) as? Person)
            #expect(ada.town?.objectID == ids.1)
            #expect(ada.town?.name == "Rome")
            #expect(ada.clubs.map(\.objectID) == [ids.2])
            let rome = try #require(fresh.existingObject(with: ids.1) as? Town)
            #expect(rome.people.map(\.name) == ["Ada"])
            // Moving through the to-many side updates the to-one side.
            let paris = Town(context: fresh)
            paris.name = "Paris"
            paris.people.insert(ada)
            #expect(ada.town === paris)
            #expect(rome.people.isEmpty)
            try fresh.save()
        }
        let third = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let town = try await third.perform { try (third.existingObject(with: ids.0) as? Person)?.town?.name }
        #expect(town == "Paris")
    }

    @Test func deleteRulesCascadeNullifyAndDeny() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        try await context.perform {
            let oslo = Town(context: context)
            oslo.name = "Oslo"
            let a = Person(context: context)
            a.name = "A"
            a.town = oslo
            let b = Person(context: context)
            b.name = "B"
            b.town = oslo
            let club = Club(context: context)
            club.title = "Chess"
            club.members = [a]
            try context.save()
            // Cascade: deleting the town deletes its people; nullify removes them from the club.
            context.delete(oslo)
            #expect(a.isDeleted && b.isDeleted)
            #expect(club.members.isEmpty)
            try context.save()
            #expect(try context.count(for: FetchRequest<Person>()) == 0)
            #expect(try context.count(for: FetchRequest<Town>()) == 0)
            #expect(try context.count(for: FetchRequest<Club>()) == 1)
        }
    }

    @Test func denyRuleFailsTheSaveNamingObjectAndRelationship() async throws {
        let dir = try TemporaryDirectory()
        let owner = EntityDescription(
            name: "Owner",
            properties: [
                AttributeDescription(name: "name", type: .string),
                RelationshipDescription(name: "pets", destination: "Pet", inverse: "owner", isToMany: true, deleteRule: .deny)
            ])
        let pet = EntityDescription(
            name: "Pet",
            properties: [
                AttributeDescription(name: "name", type: .string),
                RelationshipDescription(name: "owner", destination: "Owner", inverse: "pets")
            ])
        let model = try ManagedObjectModel(entities: [owner, pet])
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir, model: model))
        try await context.perform {
            let o = try context.insertNewObject(forEntityName: "Owner")
            try o.setValue("Ann", forKey: "name")
            let p = try context.insertNewObject(forEntityName: "Pet")
            try p.setValue("Rex", forKey: "name")
            p._setToOne(try #require(pet.relationshipsByName["owner"]), o)
            try context.save()
            context.delete(o)
            do {
                try context.save()
                Issue.record("deny should refuse the delete")
            } catch let error as CoherenceError {
                #expect(error.code == .validation)
                let denied = try #require(error.underlyingErrors.first as? CoherenceError)
                #expect(denied.code == .deleteDenied)
                #expect(denied.propertyName == "pets")
                #expect(denied.objectID == o.objectID)
            }
            #expect(o.isDeleted)  // the change is kept so the caller can fix it
            context.rollback()
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Owner")) == 1)
        }
    }

    @Test func failedValidationWritesNothing() async throws {
        let dir = try TemporaryDirectory()
        let item = EntityDescription(
            name: "Item",
            properties: [
                AttributeDescription(name: "title", type: .string, validation: .init(minLength: 1, maxLength: 10)),
                AttributeDescription(name: "qty", type: .integer64, defaultValue: 0, validation: .init(minimum: 0)),
                AttributeDescription(name: "code", type: .string, isOptional: true, validation: .init(regularExpression: "[A-Z]{3}"))
            ])
        let model = try ManagedObjectModel(entities: [item])
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir, model: model))
        try await context.perform {
            for i in 0..<1000 {
                let o = try context.insertNewObject(forEntityName: "Item")
                try o.setValue("item \(i % 100)", forKey: "title")
                if i == 500 { try o.setValue(-1, forKey: "qty") }
                if i == 501 { try o.setValue("this title is too long", forKey: "title") }
                if i == 502 { try o.setValue("abc", forKey: "code") }
                if i == 503 { try o.setValue(nil, forKey: "title") }
            }
            do {
                try context.save()
                Issue.record("validation should fail")
            } catch let error as CoherenceError {
                #expect(error.code == .validation)
                #expect(error.underlyingErrors.count == 4)
                let properties = Set(error.underlyingErrors.compactMap { ($0 as? CoherenceError)?.propertyName })
                #expect(properties == ["qty", "title", "code"])
            }
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Item", fetchLimit: 0)) == 1000)  // pending
            var direct = FetchRequest<ManagedObject>(entityName: "Item")
            direct.includesPendingChanges = false
            #expect(try context.count(for: direct) == 0)  // nothing written
            #expect(context.insertedObjects.count == 1000)  // changes intact
        }
    }

    @Test func fetchIncludesPendingChanges() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        try await context.perform {
            for (n, a) in [("A", 10), ("B", 20), ("C", 30)] {
                let p = Person(context: context)
                p.name = n
                p.age = a
            }
            try context.save()
            let all = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            all[0].age = 25  // A now matches
            context.delete(all[1])  // B deleted
            let d = Person(context: context)
            d.name = "D"
            d.age = 40  // inserted, matches
            let request = FetchRequest<Person>(predicate: #Predicate { $0.age > 15 }, sortBy: [SortDescriptor(\.age)])
            #expect(try context.fetch(request).map(\.name) == ["A", "C", "D"])
            #expect(try context.count(for: request) == 3)
            var limited = request
            limited.fetchLimit = 2
            #expect(try context.fetch(limited).map(\.name) == ["A", "C"])
        }
    }

    @Test func nestedContextsThreeLevels() async throws {
        let dir = try TemporaryDirectory()
        let root = try makeContext(dir, name: "root")
        let middle = ManagedObjectContext(concurrencyType: .privateQueue, parent: root, name: "middle")
        let leaf = ManagedObjectContext(concurrencyType: .privateQueue, parent: middle, name: "leaf")
        let tempID = try await leaf.perform {
            let p = Person(context: leaf)
            p.name = "Nested"
            p.age = 3
            try leaf.save()
            return p.objectID
        }
        #expect(tempID.isTemporaryID)
        // The middle context sees it (unsaved there), the root does not yet.
        let inMiddle = try await middle.perform { try middle.fetch(FetchRequest<Person>()).map(\.name) }
        #expect(inMiddle == ["Nested"])
        let inRootStore = try await root.perform { () throws(CoherenceError) -> Int in
            var r = FetchRequest<Person>()
            r.includesPendingChanges = false
            return try root.count(for: r)
        }
        #expect(inRootStore == 0)
        // A child fetch sees the parent's unsaved state.
        let childSees = try await leaf.perform { try leaf.count(for: FetchRequest<Person>()) }
        #expect(childSees == 1)
        try await middle.perform { try middle.save() }
        try await root.perform { try root.save() }
        // Now on disk, and the leaf's object has a permanent ID.
        let stored = try root.persistentStoreCoordinator.count(for: FetchRequest<Person>())
        #expect(stored == 1)
        let leafID = try await leaf.perform { try #require(leaf.fetch(FetchRequest<Person>()).first).objectID }
        #expect(!leafID.isTemporaryID)
        let registered = await leaf.perform { leaf.registeredObject(for: tempID) == nil }
        #expect(registered)
    }
}

@Suite("Relationship edits on faults")
struct FaultRelationshipTests {
    @Test func inverseEditsOnAFaultSurviveFillingIt() async throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir)
        let townID: ObjectID = try await context.perform {
            let t = Town(context: context)
            t.name = "Oslo"
            try context.save()
            return t.objectID
        }
        let result: (people: [String], stored: Int) = try await context.perform {
            context.reset()
            guard let town = context.object(with: townID) as? Town else { return ([], -1) }
            #expect(town.isFault)
            let ada = Person(context: context)
            ada.name = "Ada"
            ada.town = town  // parks a pending add on the fault's `people`
            _ = town.name  // fills the fault
            let names = town.people.map(\.name)
            try context.save()
            let stored = try context.count(for: FetchRequest<Person>(predicate: #Predicate { $0.town?.name == "Oslo" }))
            return (names, stored)
        }
        #expect(result.people == ["Ada"])
        #expect(result.stored == 1)
    }
}
