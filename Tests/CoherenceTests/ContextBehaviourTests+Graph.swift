import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Delete rules, identity map, faults, refreshing, lazy relationships, object IDs.

/// Country →(cascade) regions →(cascade) cities; City ↔ Tag many-to-many (nullify both ways);
/// Region.country and City.region nullify.
func makeChainModel() throws -> ManagedObjectModel {
    let country = EntityDescription(
        name: "Country",
        properties: [
            AttributeDescription(name: "name", type: .string),
            RelationshipDescription(name: "regions", destination: "Region", inverse: "country", isToMany: true, deleteRule: .cascade)
        ])
    let region = EntityDescription(
        name: "Region",
        properties: [
            AttributeDescription(name: "name", type: .string),
            RelationshipDescription(name: "country", destination: "Country", inverse: "regions", deleteRule: .nullify),
            RelationshipDescription(name: "cities", destination: "City", inverse: "region", isToMany: true, deleteRule: .cascade)
        ])
    let city = EntityDescription(
        name: "City",
        properties: [
            AttributeDescription(name: "name", type: .string),
            RelationshipDescription(name: "region", destination: "Region", inverse: "cities", deleteRule: .nullify),
            RelationshipDescription(name: "tags", destination: "Tag", inverse: "cities", isToMany: true, deleteRule: .nullify)
        ])
    let tag = EntityDescription(
        name: "Tag",
        properties: [
            AttributeDescription(name: "name", type: .string),
            RelationshipDescription(name: "cities", destination: "City", inverse: "tags", isToMany: true, deleteRule: .nullify)
        ])
    return try ManagedObjectModel(entities: [country, region, city, tag])
}

/// Dynamic helpers for models built in code.
extension ManagedObject {
    func related(_ name: String) -> [ManagedObject] {
        guard let r = entity.relationshipsByName[name] else { return [] }
        return _relatedObjects(at: r.slot)
    }
    func relate(_ name: String, to objects: [ManagedObject]) {
        guard let r = entity.relationshipsByName[name] else { return }
        _setRelatedObjects(objects, at: r.slot)
    }
    var nameValue: String { ((try? value(forKey: "name")) as? String) ?? "" }
}

@Suite("Context behaviour: delete rules")
struct ContextBehaviourDeleteRuleTests {
    @Test func cascadeTwoLevelsDeepAndNullify() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: try makeChainModel())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            func make(_ entity: String, _ name: String) throws -> ManagedObject {
                let o = try context.insertNewObject(forEntityName: entity)
                try o.setValue(name, forKey: "name")
                return o
            }
            let red = try make("Tag", "red"), blue = try make("Tag", "blue")
            let norway = try make("Country", "Norway")
            for r in ["East", "West"] {
                let region = try make("Region", r)
                region.relate("country", to: [norway])
                for c in 1...2 {
                    let city = try make("City", "\(r)\(c)")
                    city.relate("region", to: [region])
                    city.relate("tags", to: [red, blue])
                }
            }
            let italy = try make("Country", "Italy")
            let lazio = try make("Region", "Lazio")
            lazio.relate("country", to: [italy])
            let rome = try make("City", "Rome")
            rome.relate("region", to: [lazio])
            rome.relate("tags", to: [red])
            #expect(norway.related("regions").count == 2)
            #expect(red.related("cities").count == 5)
            try context.save()
            context.reset()  // everything is loaded lazily from here on

            let country = try #require(context.fetch(FetchRequest<ManagedObject>(entityName: "Country")).first { $0.nameValue == "Norway" })
            let regions = country.related("regions")
            let cities = regions.flatMap { $0.related("cities") }
            #expect(regions.count == 2 && cities.count == 4)
            context.delete(country)
            // Cascade reaches both levels at once, in memory.
            #expect(!regions.contains { !$0.isDeleted })
            #expect(!cities.contains { !$0.isDeleted })
            #expect(context.deletedObjects.count == 7)
            // Nullify: the tags no longer list the deleted cities.
            let tags = try context.fetch(FetchRequest<ManagedObject>(entityName: "Tag"))
            let byName = Dictionary(uniqueKeysWithValues: tags.map { ($0.nameValue, $0) })
            #expect(byName["red"]?.related("cities").map(\.nameValue) == ["Rome"])
            #expect(byName["blue"]?.related("cities").isEmpty == true)
            try context.save()
        }
        // On disk, read through another coordinator.
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        try await reader.perform {
            func names(_ entity: String) throws -> [String] {
                try reader.fetch(FetchRequest<ManagedObject>(entityName: entity)).map(\.nameValue).sorted()
            }
            #expect(try names("Country") == ["Italy"])
            #expect(try names("Region") == ["Lazio"])
            #expect(try names("City") == ["Rome"])
            #expect(try names("Tag") == ["blue", "red"])
            let tags = try reader.fetch(FetchRequest<ManagedObject>(entityName: "Tag"))
            let byName = Dictionary(uniqueKeysWithValues: tags.map { ($0.nameValue, $0) })
            #expect(byName["red"]?.related("cities").map(\.nameValue) == ["Rome"])
            #expect(byName["blue"]?.related("cities").isEmpty == true)
        }
    }

    @Test func nullifyRemovesADeletedObjectFromItsInverses() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let ids = try await context.perform {
            let oslo = Town(context: context)
            oslo.name = "Oslo"
            let club = Club(context: context)
            club.title = "Chess"
            let ada = Person(context: context)
            ada.name = "Ada"
            ada.town = oslo
            ada.clubs = [club]
            let bob = Person(context: context)
            bob.name = "Bob"
            bob.town = oslo
            bob.clubs = [club]
            try context.save()
            context.reset()
            let a = try #require(context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "Ada" })).first)
            let town = try #require(a.town)
            let clubObject = try #require(a.clubs.first)
            context.delete(a)  // Person.town and Person.clubs are nullify
            #expect(town.people.map(\.name) == ["Bob"])
            #expect(clubObject.members.map(\.name) == ["Bob"])
            #expect(!town.isDeleted && !clubObject.isDeleted)
            try context.save()
            return (town.objectID, clubObject.objectID)
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        try await reader.perform {
            let town = try #require(reader.existingObject(with: ids.0) as? Town)
            let club = try #require(reader.existingObject(with: ids.1) as? Club)
            #expect(town.people.map(\.name) == ["Bob"])
            #expect(club.members.map(\.name) == ["Bob"])
            #expect(try reader.count(for: FetchRequest<Person>()) == 1)
        }
    }
}

@Suite("Context behaviour: identity, faults and refreshing")
struct ContextBehaviourFaultTests {
    /// Saves Ada (30) and Bob (40) and returns their IDs.
    static func seed(_ coordinator: PersistentStoreCoordinator) async throws -> (ObjectID, ObjectID) {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "seed")
        return try await context.perform {
            let ada = Person(context: context)
            ada.name = "Ada"
            ada.age = 30
            let bob = Person(context: context)
            bob.name = "Bob"
            bob.age = 40
            try context.save()
            return (ada.objectID, bob.objectID)
        }
    }

    @Test func fetchedObjectsAreFaultsUntilRead() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        _ = try await Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            var request = FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])
            request.returnsObjectsAsFaults = true
            let people = try context.fetch(request)
            #expect(people.count == 2)
            #expect(!people.contains { !$0.isFault })
            #expect(people[0].name == "Ada")
            #expect(!people[0].isFault)
            #expect(people[1].isFault)
            // Identity: the same objects again, however they are reached.
            request.returnsObjectsAsFaults = false
            let again = try context.fetch(request)
            #expect(again[0] === people[0] && again[1] === people[1])
            #expect(!again[1].isFault)
            #expect(context.object(with: people[1].objectID) === people[1])
            #expect(context.registeredObjects.count == 2)
        }
    }

    @Test func objectWithAnUnloadedIDIsAFaultThatFillsOnAccess() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let (adaID, _) = try await Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        await context.perform {
            let rowsBefore = context.statistics.fetchedRows
            let ada = context.object(with: adaID)
            #expect(ada.isFault)
            #expect(context.statistics.fetchedRows == rowsBefore)  // nothing loaded yet
            #expect(context.registeredObject(for: adaID) === ada)
            #expect((ada as? Person)?.age == 30)
            #expect(!ada.isFault)
            #expect(context.statistics.fetchedRows == rowsBefore + 1)
        }
    }

    @Test func existingObjectThrowsForADeletedRow() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let (adaID, bobID) = try await Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "viewer")
        // A fault registered before the row goes away.
        let registered = await context.perform { context.object(with: bobID).isFault }
        #expect(registered)
        let deleter = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "deleter")
        try await deleter.perform {
            deleter.delete(try deleter.existingObject(with: adaID))
            deleter.delete(try deleter.existingObject(with: bobID))
            try deleter.save()
        }
        await context.perform {
            for id in [adaID, bobID] {
                do throws(CoherenceError) {
                    _ = try context.existingObject(with: id)
                    Issue.record("existingObject(with:) should throw for the deleted row \(id)")
                } catch {
                    #expect(error.code == .objectNotFound)
                    #expect(error.objectID == id)
                }
            }
            // object(with:) still hands out a fault; touching it finds nothing.
            let gone = context.object(with: adaID)
            #expect(gone.isFault)
            #expect((gone as? Person)?.name == "")
            do throws(CoherenceError) {
                _ = try context.existingObject(with: adaID)
                Issue.record("existingObject(with:) should throw once the fault found no row")
            } catch {
                #expect(error.code == .objectNotFound)
            }
        }
    }

    /// Core Data's `existingObject(with:)` returns an object the context knows; one the context
    /// deleted and has not saved is still known. After the save the row is gone, and so is it.
    @Test func existingObjectReturnsAnObjectDeletedButNotSaved() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let (adaID, bobID) = try await Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            let ada = try context.existingObject(with: adaID)
            context.delete(ada)
            #expect(try context.existingObject(with: adaID) === ada)
            #expect(context.object(with: adaID) === ada)
            #expect(context.registeredObject(for: adaID) === ada)
            #expect(ada.isDeleted)
            context.rollback()
            #expect(try context.existingObject(with: adaID) === ada)
            #expect(!ada.isDeleted)
            let bob = try context.existingObject(with: bobID)
            context.delete(bob)
            try context.save()
            do throws(CoherenceError) {
                _ = try context.existingObject(with: bobID)
                Issue.record("existingObject(with:) should throw once the delete is saved")
            } catch {
                #expect(error.code == .objectNotFound)
            }
        }
    }

    @Test func refreshWithoutMergingDropsChangesAndMakesAFault() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let (adaID, _) = try await Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            let ada = try #require(context.existingObject(with: adaID) as? Person)
            ada.name = "Changed"
            ada.age = 99
            #expect(context.hasChanges)
            context.refresh(ada, mergeChanges: false)
            #expect(ada.isFault)
            #expect(!ada.hasChanges)
            #expect(!context.hasChanges)
            #expect(context.updatedObjects.isEmpty)
            #expect(ada.name == "Ada" && ada.age == 30)
            #expect(!ada.isFault)
            try context.save()  // nothing to write
        }
        #expect(try await storedPerson(coordinator, adaID)?.name == "Ada")
    }

    @Test func refreshMergingReloadsStoreChangesAndKeepsLocalEdits() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let (adaID, bobID) = try await Self.seed(coordinator)
        let mine = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "mine")
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "other")
        try await mine.perform {
            let ada = try #require(mine.existingObject(with: adaID) as? Person)
            ada.score = 7  // a local edit
            _ = try #require(mine.existingObject(with: bobID) as? Person).name
        }
        try await other.perform {
            let ada = try #require(other.existingObject(with: adaID) as? Person)
            ada.name = "Ada (other)"
            ada.age = 31
            let bob = try #require(other.existingObject(with: bobID) as? Person)
            bob.name = "Bob (other)"
            try other.save()
        }
        try await mine.perform {
            let ada = try #require(mine.registeredObject(for: adaID) as? Person)
            let bob = try #require(mine.registeredObject(for: bobID) as? Person)
            #expect(ada.name == "Ada" && bob.name == "Bob")  // not reloaded yet
            mine.refresh(ada, mergeChanges: true)
            #expect(ada.name == "Ada (other)")
            #expect(ada.age == 31)
            #expect(ada.score == 7)
            #expect(ada.isUpdated)
            #expect(Set(ada.changedValues().keys) == ["score"])
            // refreshAllObjects: unchanged objects become faults and reload.
            mine.refreshAllObjects()
            #expect(bob.isFault)
            #expect(bob.name == "Bob (other)")
            #expect(ada.score == 7 && ada.name == "Ada (other)")
            // The merged object builds on the new row version: no conflict.
            try mine.save()
        }
        let stored = try await storedPerson(coordinator, adaID)
        #expect(stored?.name == "Ada (other)" && stored?.age == 31 && stored?.score == 7)
    }

    @Test func rollbackAndResetForgetUnsavedWork() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let (adaID, bobID) = try await Self.seed(coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            let ada = try #require(context.existingObject(with: adaID) as? Person)
            let bob = try #require(context.existingObject(with: bobID) as? Person)
            ada.age = 1
            context.delete(bob)
            let new = Person(context: context)
            new.name = "New"
            context.rollback()
            #expect(ada.age == 30 && !ada.hasChanges)
            #expect(!bob.isDeleted)
            #expect(new.managedObjectContext == nil)
            #expect(try context.count(for: FetchRequest<Person>()) == 2)
            context.reset()
            #expect(context.registeredObjects.isEmpty)
            #expect(ada.managedObjectContext == nil)
            let fresh = try #require(context.existingObject(with: adaID) as? Person)
            #expect(fresh !== ada && fresh.age == 30)
        }
    }
}

@Suite("Context behaviour: lazy relationships and query counts")
struct ContextBehaviourQueryCountTests {
    /// 1,000 towns with two people each, saved; returns a new coordinator on the file and its store.
    static func seedTowns(_ dir: TemporaryDirectory) async throws -> (PersistentStoreCoordinator, SQLiteStore) {
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            for i in 0..<1000 {
                let town = Town(context: context)
                town.name = "Town \(i)"
                town.population = i
                for j in 0..<2 {
                    let p = Person(context: context)
                    p.name = "P\(i)-\(j)"
                    p.age = j
                    p.town = town
                }
            }
            try context.save()
        }
        let fresh = try reopen(coordinator)
        let store = try #require(fresh.persistentStores.first?.engine as? SQLiteStore)
        return (fresh, store)
    }

    @Test func walkingAToManyRelationshipOnAThousandObjectsIsBounded() async throws {
        let dir = try TemporaryDirectory()
        let (coordinator, store) = try await Self.seedTowns(dir)
        let queries = Collector<String>()
        store.setReaderTrace { sql in queries.append(sql) }
        defer { store.setReaderTrace(nil) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            let towns = try context.fetch(FetchRequest<Town>())
            #expect(towns.count == 1000)
            let afterFetch = queries.count
            // The towns' SELECT (and before it, its statement's first run being of a whole
            // table, the table's largest key, the number of rows it expects).
            #expect(queries.all.filter { !$0.hasPrefix("SELECT max(Z_PK)") }.count == 1)
            // Nothing about the people is loaded yet.
            #expect(towns.allSatisfy { $0._state.relations == nil })
            #expect(context.registeredObjects.count == 1000)
            var people = 0
            var names = Set<String>()
            for town in towns {
                let members = town.people
                people += members.count
                for p in members { names.insert(p.name) }
            }
            #expect(people == 2000)
            #expect(names.count == 2000 && names.contains("P999-1"))
            // One query for the relationship, a few batched fault fills for the 2,000 people.
            let walking = queries.count - afterFetch
            #expect(walking >= 2 && walking <= 8, "walking issued \(walking) queries")
        }
    }

    @Test func prefetchingLoadsTheRelationshipWithTheFetch() async throws {
        let dir = try TemporaryDirectory()
        let (coordinator, store) = try await Self.seedTowns(dir)
        let queries = Collector<String>()
        store.setReaderTrace { sql in queries.append(sql) }
        defer { store.setReaderTrace(nil) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            var request = FetchRequest<Town>(predicate: #Predicate { $0.population < 100 })
            request.relationshipKeyPathsForPrefetching = ["people"]
            let towns = try context.fetch(request)
            #expect(towns.count == 100)
            let afterFetch = queries.count
            #expect(afterFetch <= 3, "\(afterFetch) queries")  // the towns, their people's IDs, the people
            let total = towns.reduce(0) { $0 + $1.people.count }
            #expect(total == 200)
            let names = Set(towns.flatMap { $0.people.map(\.name) })
            #expect(names.count == 200)
            #expect(queries.count == afterFetch)  // walking the relationship needed no query
        }
    }

    @Test func toOneRelationshipsLoadInBatchesAndPrefetch() async throws {
        let dir = try TemporaryDirectory()
        let (coordinator, store) = try await Self.seedTowns(dir)
        let queries = Collector<String>()
        store.setReaderTrace { sql in queries.append(sql) }
        defer { store.setReaderTrace(nil) }
        // Without prefetching: walking the to-one relationship fills the towns in batches.
        let walker = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await walker.perform {
            let people = try walker.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age == 1 }))
            let afterFetch = queries.count
            let towns = Set(people.compactMap { $0.town?.name })
            #expect(towns.count == 1000)
            let walking = queries.count - afterFetch
            #expect(walking >= 1 && walking <= 3, "walking a to-one relationship issued \(walking) queries")
        }
        queries.removeAll()
        // With prefetching: the towns come with the fetch.
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            var request = FetchRequest<Person>(predicate: #Predicate { $0.age == 0 })
            request.relationshipKeyPathsForPrefetching = ["town"]
            let people = try context.fetch(request)
            #expect(people.count == 1000)
            let afterFetch = queries.count
            #expect(afterFetch <= 4, "\(afterFetch) queries")  // the people, the towns in batches
            let towns = Set(people.compactMap { $0.town?.name })
            #expect(towns.count == 1000)
            #expect(queries.count == afterFetch, "reading prefetched towns issued \(queries.count - afterFetch) queries")
        }
    }
}

@Suite("Context behaviour: object IDs")
struct ContextBehaviourObjectIDTests {
    @Test func uriRoundTripThroughTheContext() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let storeID = try #require(coordinator.persistentStores.first?.identifier)
        let uri = try await context.perform {
            let ada = Person(context: context)
            ada.name = "Ada"
            let temporaryURI = ada.objectID.uriRepresentation()
            #expect(coordinator.managedObjectID(forURIRepresentation: temporaryURI) == nil)
            try context.save()
            let uri = ada.objectID.uriRepresentation()
            #expect(uri.scheme == "x-coredata")
            #expect(uri.host?.uppercased() == storeID.uuidString.uppercased())
            #expect(uri.path == "/Person/p\(ada.objectID.primaryKey)")
            let back = try #require(coordinator.managedObjectID(forURIRepresentation: uri))
            #expect(back == ada.objectID)
            #expect(context.object(with: back) === ada)
            #expect(try context.existingObject(with: back) === ada)
            return uri
        }
        // Another coordinator on the same file maps the URI to the same row.
        let other = try reopen(coordinator)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: other)
        let name = try await reader.perform { () throws -> String? in
            let id = try #require(other.managedObjectID(forURIRepresentation: uri))
            return (try reader.existingObject(with: id) as? Person)?.name
        }
        #expect(name == "Ada")
        // URIs that are not object IDs of this coordinator.
        for text in [
            "x-coredata://\(UUID().uuidString)/Person/p1", "x-coredata://\(storeID.uuidString)/Nope/p1",
            "x-coredata://\(storeID.uuidString)/Person/q1", "https://example.com/Person/p1"
        ] {
            #expect(coordinator.managedObjectID(forURIRepresentation: try #require(URL(string: text))) == nil, "\(text)")
        }
    }

    @Test func obtainPermanentIDsBeforeSave() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let saved = Collector<[ObjectID: ObjectID]>()
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.didSaveObjectIDsNotification,
            object: context, queue: nil
        ) { note in
            saved.append(note.userInfo?[ManagedObjectContext.NotificationKey.permanentObjectIDs] as? [ObjectID: ObjectID] ?? [:])
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let (permanent, otherTemp) = try await context.perform {
            let ada = Person(context: context)
            ada.name = "Ada"
            let oslo = Town(context: context)
            oslo.name = "Oslo"
            ada.town = oslo
            let tempID = ada.objectID
            try context.obtainPermanentIDs(for: [ada])
            #expect(!ada.objectID.isTemporaryID)
            #expect(oslo.objectID.isTemporaryID)
            #expect(ada.isInserted)
            #expect(context.registeredObject(for: ada.objectID) === ada)
            #expect(context.registeredObject(for: tempID) == nil)
            let permanent = ada.objectID
            let otherTemp = oslo.objectID
            try context.save()
            #expect(ada.objectID == permanent)  // the save keeps the obtained ID
            #expect(!oslo.objectID.isTemporaryID)
            return (permanent, otherTemp)
        }
        // Only the object that still had a temporary ID at save is in the map.
        let map = try #require(saved.all.first)
        #expect(map.count == 1)
        #expect(map[otherTemp] != nil)
        #expect(map.values.contains(permanent) == false)
        let stored = try await storedPerson(coordinator, permanent)
        #expect(stored?.name == "Ada" && stored?.town == "Oslo")
    }
}
