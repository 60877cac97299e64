import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Every fetch registers its objects one way (`RowRegistration`), whatever the context's source
/// hands over: rows of one store, the merged rows of several, or a parent context's snapshots.
@Suite("Fetch registration")
struct FetchRegistrationTests {
    /// A child fetch registers the parent's unsaved state: it fills a fault the child registered
    /// before (the same object), keeps the parent's to-one destinations (a new town's temporary
    /// ID too), and a second fetch returns the same objects.
    @Test(arguments: [false, true])
    func aChildFetchRegistersItsParentsObjects(asFaults: Bool) async throws {
        let dir = try TemporaryDirectory()
        let parent = try makeContext(dir, name: "parent")
        let adaID: ObjectID = try await parent.perform {
            let oslo = Town(context: parent)
            oslo.name = "Oslo"
            let ada = Person(context: parent)
            ada.name = "Ada"
            ada.age = 30
            ada.town = oslo
            try parent.save()
            // Unsaved in the parent: a change, and a new person in a new town.
            ada.age = 31
            let rome = Town(context: parent)
            rome.name = "Rome"
            let bea = Person(context: parent)
            bea.name = "Bea"
            bea.town = rome
            return ada.objectID
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try await child.perform {
            let fault = child.object(with: adaID)
            #expect(fault.isFault)
            var request = FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])
            request.returnsObjectsAsFaults = asFaults
            let people = try child.fetch(request)
            #expect(people.first === fault)
            // Filled by the fetch: its values are in memory (a prefilled fault when fetched as faults).
            #expect(fault.isFault == asFaults && fault._state.flags.contains(.prefilled) == asFaults)
            #expect(people.map(\.name) == ["Ada", "Bea"])
            #expect(people[0].age == 31)
            #expect(people.map { $0.town?.name } == ["Oslo", "Rome"])
            #expect(people[1].town?.objectID.isTemporaryID == true)
            #expect(!people[0].hasChanges && !people[1].hasChanges)
            let again = try child.fetch(request)
            #expect(again.count == 2 && zip(again, people).allSatisfy { $0 === $1 })
        }
    }

    /// A fetch from two stores registers their merged rows, each object with its own store's ID,
    /// and reuses the objects already registered.
    @Test func aFetchFromSeveralStoresRegistersEachRowInItsStore() throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let first = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("a.sqlite"))
        let second = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("b.sqlite"))
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try writer.performAndWait {
            for (name, store) in [("Bergen", second), ("Oslo", first), ("Alta", second)] {
                let town = Town(context: writer)
                town.name = name
                try writer.assign(town, to: store)
            }
            try writer.save()
        }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let towns = try context.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)]))
            #expect(towns.map(\.name) == ["Alta", "Bergen", "Oslo"])
            #expect(towns.map(\.objectID.storeIdentifier) == [second.identifier, second.identifier, first.identifier])
            #expect(towns.allSatisfy { context.registeredObject(for: $0.objectID) === $0 && !$0.hasChanges })
            let again = try context.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)]))
            #expect(again.count == 3 && zip(again, towns).allSatisfy { $0 === $1 })
        }
    }

    /// A fetch of an entity hierarchy whose rows alternate between sub-entities (runs of one row
    /// each) makes each object of its row's class with its row's values; a row whose entity
    /// number is not in the hierarchy fails the fetch with `corruptRow` and registers nothing.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func rowsOfAlternatingSubentitiesEachGetTheirClassAndValues(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try dir.storeURL(type, "shapes")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: type, at: url)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try writer.performAndWait {
            for i in 0..<7 {
                // Two circles, a square, two circles, a square…: runs of one and of two rows.
                if i % 3 == 2 {
                    let square = Square(context: writer)
                    square.label = "s\(i)"
                    square.side = Double(i)
                } else {
                    let circle = Circle(context: writer)
                    circle.label = "c\(i)"
                    circle.radius = Double(i) / 2
                }
                try writer.save()  // one row at a time: keys in this order
            }
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let shapes = try reader.fetch(FetchRequest<Shape>())
            #expect(shapes.map(\.label) == ["c0", "c1", "s2", "c3", "c4", "s5", "c6"])
            for shape in shapes {
                let i = try #require(Int(shape.label.dropFirst()))
                if let circle = shape as? Circle {
                    #expect(i % 3 != 2 && circle.radius == Double(i) / 2 && circle.entity.name == "Circle")
                } else if let square = shape as? Square {
                    #expect(i % 3 == 2 && square.side == Double(i) && square.entity.name == "Square")
                } else {
                    Issue.record("\(shape.label) is a \(Swift.type(of: shape))")
                }
            }
        }
        // A row that names an entity outside the hierarchy.
        switch type {
        case .sqlite:
            let c = try SQLiteConnection(location: .file(try #require(url).path), switchesToWAL: false)
            try c.execute("UPDATE \"Shape\" SET Z_ENT = 99 WHERE label = 'c4'")
        case .postgreSQL:
            let schema = SQLDialect.postgreSQL.quote(PostgreSQLTestServer.schema(of: try #require(url)))
            _ = try PostgreSQLTestServer.connection().execute("UPDATE \(schema).\"Shape\" SET z_ent = 99 WHERE label = 'c4'")
        default:
            return  // (in memory: no row to spoil)
        }
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        fresh.performAndWait {
            let error = #expect(throws: CoherenceError.self) { _ = try fresh.fetch(FetchRequest<Shape>()) }
            #expect(error?.code == .corruptRow && error?.message.contains("99") == true)
            #expect(fresh.registeredObjects.isEmpty)
        }
    }
}
