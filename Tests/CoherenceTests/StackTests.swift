import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// The HR model shipped with the tests (Resources/HR.xcdatamodeld).
func hrModel() throws -> ManagedObjectModel { try ManagedObjectModel(named: "HR", in: .module) }

/// Waits for the first event of `stream` that satisfies `condition`.
func firstEvent(_ stream: AsyncStream<ContextEvent>, where condition: @Sendable (ContextEvent) -> Bool) async -> ContextEvent? {
    for await event in stream where condition(event) { return event }
    return nil
}

@Suite("Stack: models, configurations, containers")
struct StackTests {
    @Test func loadsTheCurrentVersionOfAnXcodeModel() throws {
        let model = try hrModel()
        #expect(Set(model.entities.map(\.name)) == ["Department", "Employee", "Session"])
        let employee = try #require(model.entitiesByName["Employee"])
        let types = Dictionary(uniqueKeysWithValues: employee.attributes.map { ($0.name, $0.type) })
        #expect(types["active"] == .boolean && types["badge"] == .uuid && types["hired"] == .date && types["homepage"] == .uri)
        #expect(types["level"] == .integer16 && types["number"] == .integer32 && types["seniority"] == .integer64)
        #expect(types["photo"] == .binaryData && types["rating"] == .float && types["salary"] == .decimal && types["score"] == .double)
        #expect(types["tags"] == .transformable && types["name"] == .string)
        #expect(employee.attributesByName["tags"]?.valueTransformerName == "NSSecureUnarchiveFromData")
        #expect(employee.attributesByName["scratch"]?.isTransient == true)
        #expect(employee.attributesByName["name"]?.isOptional == false)
        #expect(employee.attributesByName["active"]?.defaultValue == .integer(1))
        #expect(employee.attributesByName["level"]?.validation.minimum == 1)
        #expect(employee.attributesByName["email"]?.validation.regularExpression == "[^@]+@[^@]+")
        #expect(model.entitiesByName["Department"]?.attributesByName["code"]?.validation.maxLength == 8)
        #expect(model.entitiesByName["Department"]?.attributesByName["title"]?.defaultValue == .text("Untitled"))
        let department = try #require(employee.relationshipsByName["department"])
        #expect(department.inverseRelationship?.name == "employees")
        #expect(department.inverseRelationship?.deleteRule == .cascade)
        #expect(department.userInfo["note"] as? String == "home department")
        #expect(employee.uniquenessConstraints == [["email"]])
        #expect(employee.indexes == [["level"]])
        #expect(employee.userInfo["uniquenessAttributes"] as? String == "email")
        #expect(model.configurations["PersistentData"] == ["Department", "Employee"])
        #expect(model.configurations["TransientData"] == ["Session"])
    }

    @Test func missingOrBrokenModelsAreErrorsNotCrashes() throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Mixed>(name: "NoSuchModel", bundle: .module)
        connect.storeLocation = dir.url
        #expect(connect.modelError?.code == .modelNotFound)
        #expect(connect.modelError?.message.contains("NoSuchModel") == true)
        #expect(throws: ModelError.self) { try connect.start() }
        #expect(!connect.isStarted)

        let broken = dir.file("Broken.xcdatamodel")
        try FileManager.default.createDirectory(at: broken, withIntermediateDirectories: true)
        try Data("<model><entity name=\"A\"><attribute name=\"x\" attributeType=\"String\"></model>".utf8)
            .write(to: broken.appendingPathComponent("contents"))
        do {
            _ = try ManagedObjectModel(contentsOf: broken)
            Issue.record("a broken model file loaded")
        } catch {
            #expect(error.code == .modelParse)
            #expect(error.message.contains("contents"))
        }
    }

    @Test func storeConfigurationDefaultsEqualityAndFileNames() {
        let c = StoreConfiguration()
        #expect(c.fileName == nil && c.name == nil && c.type == .sqlite && !c.overwriteIncompatibleStore)
        #expect(c.options == StoreOptions(migratesAutomatically: true, infersMappingModelAutomatically: true))
        #expect(c == StoreConfiguration(fileName: nil, name: nil, type: .sqlite))
        #expect(c != StoreConfiguration(name: "X"))
        #expect(c != StoreConfiguration(overwriteIncompatibleStore: true))
        let location = URL(fileURLWithPath: "/data")
        #expect(c.url(in: location, containerName: "HR")?.path == "/data/HR.sqlite")
        #expect(StoreConfiguration(name: "PersistentData").url(in: location, containerName: "HR")?.path == "/data/HR.persistentdata.sqlite")
        #expect(StoreConfiguration(fileName: "x.db", name: "P").url(in: location, containerName: "HR")?.path == "/data/x.db")
        #expect(StoreConfiguration(name: "T", type: .inMemory).url(in: location, containerName: "HR") == nil)
        #expect(StoreConfiguration(fileName: "X", name: "Y").description == "<StoreConfiguration> (fileName: 'X', name: 'Y', type: SQLite)")
        #expect(StoreConfiguration().description == "<StoreConfiguration> (type: SQLite)")
        // A server's location is shown without its password.
        let server = StoreConfiguration(type: .postgreSQL, location: URL(string: "postgresql://u:hunter2secret@h/db?schema=s"))
        #expect(server.description == "<StoreConfiguration> (type: PostgreSQL, location: postgresql://u@h/db?schema=s)")
        #expect(server.url(in: location, containerName: "HR") == nil)
        #expect(server != StoreConfiguration(type: .postgreSQL, location: nil))
    }

    @Test func userLocationsCannotEscapeTheirParent() throws {
        let parent = URL(fileURLWithPath: "/srv/app")
        #expect(try StoreLocation.location(forUser: "alice", under: parent).path == "/srv/app/alice")
        for bad in ["", ".", "..", "a/b", "../x", "a\u{0}b"] {
            do {
                _ = try StoreLocation.location(forUser: bad, under: parent)
                Issue.record("accepted \(String(reflecting: bad))")
            } catch {
                #expect(error.code == .invalidLocation)
            }
        }
    }

    @Test func storeFileNamesCannotEscapeTheLocation() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: "Names", managedObjectModel: model)
        for bad in ["../escape.sqlite", "sub/store.sqlite", "", ".."] {
            do {
                try container.attachPersistentStore(at: dir.url, for: StoreConfiguration(fileName: bad))
                Issue.record("accepted file name \(String(reflecting: bad))")
            } catch let error as CoherenceError {
                #expect(error.code == .invalidLocation)
            }
        }
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.url.deletingLastPathComponent().appendingPathComponent("escape.sqlite").path))
    }

    @Test func scenariosConfigurationsPerUserAndGlobalThenUser() throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Mixed>(name: "HR", bundle: .module)
        connect.storeLocation = dir.url
        // Custom configurations, then start.
        let stores = try connect.attachPersistentStores(for: [
            StoreConfiguration(name: "TransientData", type: .inMemory),
            StoreConfiguration(name: "PersistentData", type: .sqlite)
        ])
        try connect.start()
        #expect(stores.map(\.type) == [.inMemory, .sqlite])
        #expect(FileManager.default.fileExists(atPath: dir.file("HR.persistentdata.sqlite").path))
        // A user's store after start, at <location>/<user>, created with owner-only permissions.
        let alice = try connect.attachPersistentStore(
            at: StoreLocation.location(forUser: "alice", under: dir.url),
            for: StoreConfiguration(fileName: "alice.sqlite", name: "PersistentData"))
        let attributes = try FileManager.default.attributesOfItem(atPath: dir.file("alice").path)
        #expect(attributes[.posixPermissions] as? Int == 0o700)
        let fileAttributes = try FileManager.default.attributesOfItem(atPath: dir.file("alice/alice.sqlite").path)
        #expect(fileAttributes[.posixPermissions] as? Int == 0o600)
        #expect(connect.persistentStoreCoordinator.persistentStores.count == 3)
        try connect.detach(persistentStore: alice)
        #expect(connect.persistentStoreCoordinator.persistentStores.count == 2)
        #expect(throws: CoherenceError.self) { try connect.detach(persistentStore: alice) }
        try connect.stop()
        #expect(connect.persistentStoreCoordinator.persistentStores.isEmpty)
    }

    @Test func noConfigurationStartAttachesTheDefaultStore() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
        let connect = GenericConnect<ContextStrategy.Direct>(name: "Default", managedObjectModel: model)
        connect.storeLocation = dir.url
        #expect(connect.state == .stopped)
        try connect.start()
        #expect(connect.state == .started)
        try connect.start()  // harmless
        #expect(connect.persistentStoreCoordinator.persistentStores.map(\.url?.lastPathComponent) == ["Default.sqlite"])
        try connect.stop()
        try connect.stop()  // harmless
        #expect(connect.state == .stopped)
        try connect.start()  // start → stop → start
        #expect(connect.isStarted && connect.persistentStoreCoordinator.persistentStores.count == 1)
    }
}

/// Saves in a background context and checks the view context and the disk, per strategy.
@Suite("Stack: context strategies", .timeLimit(.minutes(10)))
struct StrategyTests {
    func exercise<S: ContextStrategyType>(_ strategy: S.Type, updatesView: Bool, type: StoreType = .sqlite) async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
        // A PostgreSQL store is configured; a SQLite store is the default one, at the location.
        let configuration = type == .sqlite ? nil : StoreConfiguration(type: type, location: try dir.storeURL(type))
        let connect = GenericConnect<S>(name: "Strategies", managedObjectModel: model)
        connect.storeLocation = dir.url
        if let configuration { try connect.attachPersistentStore(for: configuration) }
        try connect.start()
        let view = connect.viewContext
        // The view context holds one town before the background work.
        let townID: ObjectID = try await view.perform {
            let t = Town(context: view)
            t.name = "Oslo"
            t.population = 1
            try view.save()
            return t.objectID
        }
        let savedTown = try await waitUntilStored(connect, townID)
        let viewChanges = view.events
        let background = connect.newBackgroundContext()
        let inserted: ObjectID = try await background.perform {
            guard let town = try background.existingObject(with: savedTown) as? Town else { throw CoherenceError(.objectNotFound, "town") }
            town.population = 2
            let p = Person(context: background)
            p.name = "Ada"
            p.town = town
            try background.save()
            return p.objectID
        }
        if updatesView {
            // The first change that brings the background's insert (a merge of the view's own
            // earlier save may come before it and list the town).
            let event = await firstEvent(viewChanges) { e in
                e.kind == .objectsDidChange && e.inserted.contains { $0.entity.name == "Person" }
            }
            #expect(event != nil)
            let population: Int = await view.perform { (view.registeredObject(for: savedTown) as? Town)?.population ?? -1 }
            #expect(population == 2)
            let people: [String] = try await view.perform { try view.fetch(FetchRequest<Person>()).map(\.name) }
            #expect(people == ["Ada"])
        } else {
            let population: Int = await view.perform { (view.registeredObject(for: savedTown) as? Town)?.population ?? -1 }
            #expect(population == 1)  // the view context was not updated
            let fresh = connect.newBackgroundContext()
            let seen: Int = try await fresh.perform { try fresh.count(for: FetchRequest<Person>()) }
            #expect(seen == 1)
        }
        _ = inserted
        // On disk after a restart.
        _ = try await waitUntilCount(connect, 1)
        try connect.stop()
        let again = GenericConnect<S>(name: "Strategies", managedObjectModel: model)
        again.storeLocation = dir.url
        if let configuration { try again.attachPersistentStore(for: configuration) }
        try again.start()
        let count = try again.persistentStoreCoordinator.count(for: FetchRequest<Person>())
        #expect(count == 1)
    }

    /// The ID the town has in the store (IndirectNested and Mixed save through the root
    /// asynchronously).
    func waitUntilStored<S>(_ connect: GenericConnect<S>, _ id: ObjectID) async throws -> ObjectID {
        if !id.isTemporaryID { return id }
        _ = try await waitUntilCount(connect, 1, entity: "Town")
        return try connect.persistentStoreCoordinator.fetchObjectIDs(FetchRequest<ManagedObject>(entityName: "Town"))[0]
    }

    /// Waits (by awaiting coordinator-level saves of the root context) until `n` rows exist.
    func waitUntilCount<S>(_ connect: GenericConnect<S>, _ n: Int, entity: String = "Person") async throws -> Int {
        // IndirectNested and Mixed write the view context's saves through their root context,
        // asynchronously; the others have written when `save()` returns.
        let root =
            (connect.strategy as? ContextStrategy.IndirectNested)?.rootContext ?? (connect.strategy as? ContextStrategy.Mixed)?.rootContext
        guard let root else {
            return try connect.persistentStoreCoordinator.count(for: FetchRequest<ManagedObject>(entityName: entity))
        }
        let saves = root.events
        var count = try connect.persistentStoreCoordinator.count(for: FetchRequest<ManagedObject>(entityName: entity))
        if count >= n { return count }
        for await event in saves where event.kind == .didSave {
            _ = event
            count = try connect.persistentStoreCoordinator.count(for: FetchRequest<ManagedObject>(entityName: entity))
            if count >= n { break }
        }
        return count
    }

    @Test(arguments: storedTypes) func direct(_ type: StoreType) async throws {
        try await exercise(ContextStrategy.Direct.self, updatesView: true, type: type)
    }
    @Test(arguments: storedTypes) func directIndependent(_ type: StoreType) async throws {
        try await exercise(ContextStrategy.DirectIndependent.self, updatesView: false, type: type)
    }
    @Test(arguments: storedTypes) func indirectNested(_ type: StoreType) async throws {
        try await exercise(ContextStrategy.IndirectNested.self, updatesView: true, type: type)
    }
    @Test(arguments: storedTypes) func mixed(_ type: StoreType) async throws {
        try await exercise(ContextStrategy.Mixed.self, updatesView: true, type: type)
    }
}
