import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Opens `url` (a SQLite file, or a PostgreSQL store's URL) with `model`, runs `body` in a
/// context on it, then detaches the store.
@discardableResult
func withMigrationStore<T>(
    _ model: ManagedObjectModel, at url: URL, options: StoreOptions = StoreOptions(),
    _ body: (ManagedObjectContext) throws -> T
) throws -> T {
    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    let store = try coordinator.addPersistentStore(type: migrationStoreType(url), at: url, options: options)
    defer { try? coordinator.remove(store) }
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    return try context.performAndWait { () throws -> T in try body(context) }
}

/// Inserts an object with values, in a context.
@discardableResult
func insertObject(_ context: ManagedObjectContext, _ entity: String, _ values: [String: Any?]) throws -> ManagedObject {
    let object = try context.insertNewObject(forEntityName: entity)
    for (k, v) in values { try object.setValue(v, forKey: k) }
    return object
}

/// The objects of an entity, sorted by their `name`.
func fetchByName(_ context: ManagedObjectContext, _ entity: String) throws -> [ManagedObject] {
    try context.fetch(FetchRequest<ManagedObject>(entityName: entity)).sorted { $0.nameValue < $1.nameValue }
}

/// Inferred (lightweight) migrations of SQLite and PostgreSQL stores: each change they infer, and
/// each error.
@Suite("Migrations: inferred")
struct MigrationTests {
    /// Person at the first version.
    static func person(indexes: [[String]] = [], adding extra: [PropertyDescription] = []) -> EntityDescription {
        EntityDescription(
            name: "Person",
            properties: [
                AttributeDescription(name: "name", type: .string),
                AttributeDescription(name: "age", type: .integer16, defaultValue: Int16(0)),
                AttributeDescription(name: "nickname", type: .string, isOptional: true),
                RelationshipDescription(name: "town", destination: "Town", inverse: "people")
            ] + extra, indexes: indexes)
    }

    /// Town with its people.
    static func town(uniquenessConstraints: [[String]] = []) -> EntityDescription {
        EntityDescription(
            name: "Town",
            properties: [
                AttributeDescription(name: "name", type: .string),
                RelationshipDescription(name: "people", destination: "Person", inverse: "town", isToMany: true)
            ], uniquenessConstraints: uniquenessConstraints)
    }

    /// Person with `properties` after its name, and a Town with a name only.
    static func personAndPlainTown(_ properties: [PropertyDescription]) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Person", properties: [AttributeDescription(name: "name", type: .string)] + properties),
            EntityDescription(name: "Town", properties: [AttributeDescription(name: "name", type: .string)])
        ])
    }

    static func v1() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [person(indexes: [["age"]]), town()], versionIdentifier: "1")
    }

    /// Two towns and three people (one without a nickname or a town).
    static func fill(_ url: URL) throws {
        try withMigrationStore(try v1(), at: url) { context in
            let oslo = try insertObject(context, "Town", ["name": "Oslo"])
            let rome = try insertObject(context, "Town", ["name": "Rome"])
            try insertObject(context, "Person", ["name": "Ada", "age": Int16(36), "nickname": "A"]).relate("town", to: [oslo])
            try insertObject(context, "Person", ["name": "Bob", "age": Int16(40), "nickname": "B"]).relate("town", to: [rome])
            try insertObject(context, "Person", ["name": "Cy", "age": Int16(7)])
            try context.save()
        }
    }

    @Test(arguments: storedTypes)
    func addsAndRemovesEntitiesAndAttributesAndWidensNumbers(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fill(url)
        let v2 = try ManagedObjectModel(
            entities: [
                // Sorts first: every entity number moves.
                EntityDescription(name: "Address", properties: [AttributeDescription(name: "name", type: .string, isOptional: true)]),
                EntityDescription(
                    name: "Person",
                    properties: [
                        AttributeDescription(name: "name", type: .string),
                        AttributeDescription(name: "age", type: .integer64, defaultValue: 0),
                        AttributeDescription(name: "email", type: .string, isOptional: true),
                        AttributeDescription(name: "score", type: .double, defaultValue: 1.5),
                        RelationshipDescription(name: "town", destination: "Town", inverse: "people")
                    ], indexes: [["name"]]),
                Self.town()
            ], versionIdentifier: "2")
        try withMigrationStore(v2, at: url) { context in
            let people = try fetchByName(context, "Person")
            #expect(people.map(\.nameValue) == ["Ada", "Bob", "Cy"])
            #expect(people.map { (try? $0.value(forKey: "age")) as? Int } == [36, 40, 7])
            #expect(people.map { (try? $0.value(forKey: "score")) as? Double } == [1.5, 1.5, 1.5])
            #expect(people.map { (try? $0.value(forKey: "email")) as? String } == [nil, nil, nil])
            #expect(people.map { $0.related("town").map(\.nameValue) } == [["Oslo"], ["Rome"], []])
            let towns = try fetchByName(context, "Town")
            #expect(towns.map { $0.related("people").count } == [1, 1])
            // New rows get fresh keys in every table.
            try insertObject(context, "Address", ["name": "Main St"])
            try insertObject(context, "Person", ["name": "Dee"])
            try context.save()
            #expect(try fetchByName(context, "Person").count == 4)
        }
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: type, at: url)
        #expect(metadata["versionIdentifier"] == "2")
        #expect(v2.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        // The old index is gone, the new one exists.
        if type == .postgreSQL {
            let dump = try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url))
            #expect(dump.contains("\"Z_Person_name\"") && !dump.contains("\"Z_Person_age\"") && !dump.contains("Z_MIGRATING"))
            return
        }
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        let indexes = try c.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Person'").rows { $0.string(0) }
        #expect(indexes.contains("Z_Person_name") && !indexes.contains("Z_Person_age"))
        let tables = try c.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z_MIGRATING%'").rows { $0.string(0) }
        #expect(tables.isEmpty)
    }

    /// An attribute with one value for every row is added with `ALTER TABLE … ADD COLUMN`: the
    /// table is not copied.
    @Test(arguments: storedTypes)
    func anAttributeForEveryRowIsAddedWithoutCopyingTheTable(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fill(url)
        let v2 = try ManagedObjectModel(entities: [
            Self.person(indexes: [["age"]], adding: [AttributeDescription(name: "motto", type: .string, defaultValue: "hi")]),
            Self.town()
        ])
        let mottos = try withMigrationStore(v2, at: url) { context in
            try fetchByName(context, "Person").map { (try? $0.value(forKey: "motto")) as? String }
        }
        #expect(mottos == ["hi", "hi", "hi"])
        if type == .postgreSQL {
            let dump = try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url))
            #expect(dump.contains("Person.motto text 'hi'"), "\(dump)")
            return
        }
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        let sql = try c.prepare("SELECT sql FROM sqlite_master WHERE name = 'Person'").rows { $0.string(0) }.first ?? ""
        #expect(sql.contains("\"motto\" TEXT DEFAULT 'hi'"), "\(sql)")
    }

    @Test(arguments: storedTypes)
    func renamesAndToOneBecomesToManyAndANewAbstractParent(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fill(url)
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Being", isAbstract: true,
                properties: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(
                name: "Human", superentity: "Being",
                properties: [
                    AttributeDescription(name: "years", type: .integer32, defaultValue: Int32(0), renamingIdentifier: "age"),
                    AttributeDescription(name: "nickname", type: .string, defaultValue: "none"),
                    RelationshipDescription(
                        name: "towns", destination: "City", inverse: "people", isToMany: true, renamingIdentifier: "town")
                ], renamingIdentifier: "Person"),
            EntityDescription(
                name: "City",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "people", destination: "Human", inverse: "towns", isToMany: true)
                ], renamingIdentifier: "Town")
        ])
        try withMigrationStore(v2, at: url) { context in
            let people = try fetchByName(context, "Human")
            #expect(people.map(\.nameValue) == ["Ada", "Bob", "Cy"])
            #expect(try fetchByName(context, "Being").count == 3)
            #expect(people.map { (try? $0.value(forKey: "years")) as? Int32 } == [36, 40, 7])
            // Optional → required with a default: the nil takes the default.
            #expect(people.map { (try? $0.value(forKey: "nickname")) as? String } == ["A", "B", "none"])
            #expect(people.map { $0.related("towns").map(\.nameValue) } == [["Oslo"], ["Rome"], []])
            let cities = try fetchByName(context, "City")
            #expect(cities.map { $0.related("people").map(\.nameValue) } == [["Ada"], ["Bob"]])
        }
    }

    @Test(arguments: storedTypes)
    func aToManyBecomesToOne(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fill(url)
        // Person.town stays; Town.people loses its inverse and becomes a to-one "mayor" renamed from it.
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Person",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "age", type: .integer16, defaultValue: Int16(0)),
                    RelationshipDescription(name: "town", destination: "Town")
                ]),
            EntityDescription(
                name: "Town",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "mayor", destination: "Person", renamingIdentifier: "people")
                ])
        ])
        try withMigrationStore(v2, at: url) { context in
            let towns = try fetchByName(context, "Town")
            let people = try fetchByName(context, "Person")
            #expect(towns.map { $0.related("mayor").map(\.nameValue) } == [["Ada"], ["Bob"]])
            #expect(people.map { $0.related("town").map(\.nameValue) } == [["Oslo"], ["Rome"], []])
        }
    }

    /// The file's bytes and its metadata, to check that a refused migration changed nothing.
    static func snapshot(_ url: URL) throws -> Data { try migrationStoreContents(url) }

    @Test(arguments: storedTypes)
    func aRequiredAttributeWithoutDefaultAndNilsIsATypedErrorAndTheStoreIsUnchanged(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fill(url)
        let before = try Self.snapshot(url)
        let v2 = try Self.personAndPlainTown([AttributeDescription(name: "nickname", type: .string)])
        let error = #expect(throws: CoherenceError.self) { try withMigrationStore(v2, at: url) { _ in } }
        #expect(error?.code == .migrationMissingValues)
        #expect(error?.entityName == "Person" && error?.propertyName == "nickname")
        #expect(error?.message.contains("1 existing row") == true)
        #expect(try Self.snapshot(url) == before)
        // Still opens at its old version.
        let people = try withMigrationStore(try Self.v1(), at: url) { context in try fetchByName(context, "Person") }
        #expect(people.count == 3)
    }

    @Test(arguments: storedTypes)
    func aTypeChangeIsNotInferableAndTheStoreIsUnchanged(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fill(url)
        let before = try Self.snapshot(url)
        let v2 = try Self.personAndPlainTown([AttributeDescription(name: "age", type: .string, isOptional: true)])
        let error = #expect(throws: CoherenceError.self) { try withMigrationStore(v2, at: url) { _ in } }
        #expect(error?.code == .migrationNotInferable)
        #expect(error?.entityName == "Person" && error?.propertyName == "age")
        #expect(try Self.snapshot(url) == before)
    }

    @Test(arguments: storedTypes)
    func aNewUniquenessConstraintThatRowsViolateNamesTheDuplicates(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try withMigrationStore(try Self.v1(), at: url) { context in
            for name in ["Oslo", "Oslo", "Rome"] { try insertObject(context, "Town", ["name": name]) }
            try context.save()
        }
        let before = try Self.snapshot(url)
        let v2 = try ManagedObjectModel(entities: [Self.person(), Self.town(uniquenessConstraints: [["name"]])])
        let error = #expect(throws: CoherenceError.self) { try withMigrationStore(v2, at: url) { _ in } }
        #expect(error?.code == .migrationUniquenessViolated)
        #expect(error?.entityName == "Town")
        #expect(error?.message.contains("'Oslo'") == true && error?.message.contains("Rome") == false)
        #expect(try Self.snapshot(url) == before)
    }

    @Test(arguments: storedTypes)
    func withoutAutomaticMigrationAChangedModelIsIncompatible(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try Self.fill(url)
        let before = try Self.snapshot(url)
        let v2 = try Self.personAndPlainTown([])
        let error = #expect(throws: CoherenceError.self) {
            try withMigrationStore(v2, at: url, options: StoreOptions(migratesAutomatically: false)) { _ in }
        }
        #expect(error?.code == .storeIncompatible)
        #expect(try Self.snapshot(url) == before)
        let notInferred = #expect(throws: CoherenceError.self) {
            try withMigrationStore(v2, at: url, options: StoreOptions(infersMappingModelAutomatically: false)) { _ in }
        }
        #expect(notInferred?.code == .storeIncompatible)
        #expect(try Self.snapshot(url) == before)
    }

    @Test func historySurvivesAndProgressCountsRows() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("m.sqlite")
        let tracking = StoreOptions(persistentHistoryTracking: true)
        try withMigrationStore(try Self.v1(), at: url, options: tracking) { context in
            for i in 0..<5 { try insertObject(context, "Town", ["name": "T\(i)"]) }
            try context.save()
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(name: "Person", properties: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(name: "Town", properties: [AttributeDescription(name: "title", type: .string, renamingIdentifier: "name")])
        ])
        let progress = Progress(totalUnitCount: 1)
        progress.becomeCurrent(withPendingUnitCount: 1)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: v2)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: tracking)
        progress.resignCurrent()
        #expect(progress.fractionCompleted == 1)
        let history = try coordinator.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil)).transactions
        #expect(history.count == 1)
        #expect(history.first?.changes?.count == 5)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let towns = try context.performAndWait { () throws -> Int in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Town")).count
        }
        #expect(towns == 5)
    }
}

/// The type of the store at a migration test's URL: PostgreSQL for a `postgresql:` URL, else SQLite.
func migrationStoreType(_ url: URL) -> StoreType { url.scheme == "postgresql" ? .postgreSQL : .sqlite }

/// The location of a migration test's store of `type`: a SQLite file in `dir`, or a PostgreSQL
/// schema of the test.
func migrationStoreURL(_ type: StoreType, _ dir: TemporaryDirectory, _ name: String = "m") throws -> URL {
    type == .postgreSQL ? try dir.postgreSQLURL(name) : dir.file(name + ".sqlite")
}

/// Everything the store at `url` holds (the file's bytes, or the schema's tables, indexes and
/// rows), to check that a refused migration changed nothing.
func migrationStoreContents(_ url: URL) throws -> Data {
    guard migrationStoreType(url) == .postgreSQL else { return try Data(contentsOf: url) }
    return Data(try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url)).utf8)
}

/// Whether a staged migration left a copy of the store at `url` (a file in `dir`, or a schema).
func migrationCopyLeft(_ url: URL, in dir: TemporaryDirectory) throws -> Bool {
    guard migrationStoreType(url) == .postgreSQL else {
        return try FileManager.default.contentsOfDirectory(atPath: dir.url.path).contains { $0.contains("migrating") }
    }
    return try PostgreSQLTestServer.schemaExists(PostgreSQLMigrationCopy.copyName(of: PostgreSQLTestServer.schema(of: url)))
}
