import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A temporary directory for one test, removed when the value goes away; and the test's
/// PostgreSQL schemas (``postgreSQLURL(_:)``), dropped with it.
final class TemporaryDirectory {
    let url: URL
    /// A name unique to this test run, for schemas.
    private let unique: String
    private var schemas: [String] = []
    init(_ name: String = #function) throws {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        unique = "\(safe.prefix(30))_\(UUID().uuidString.prefix(8))".lowercased()
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("coherence-tests-\(safe)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The URL of a store in a new schema of the test server, unique to this test (`name`
    /// tells several apart), dropped when this directory goes away. Fails the test when no
    /// server is configured (see ``PostgreSQLTestServer``).
    func postgreSQLURL(_ name: String = "store") throws -> URL {
        let schema = "t_\(unique)_\(name)".lowercased()
        let url = try PostgreSQLTestServer.url(schema: schema)
        schemas.append(schema)
        return url
    }

    /// The location of a store of `type`: a file here, nothing (in-memory) or a schema.
    func storeURL(_ type: StoreType, _ name: String = "store") throws -> URL? {
        switch type {
        case .sqlite: return file(name + ".sqlite")
        case .postgreSQL: return try postgreSQLURL(name)
        default: return nil
        }
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
        for schema in schemas {
            PostgreSQLTestServer.drop(schema: schema)
            PostgreSQLTestServer.drop(schema: PostgreSQLMigrationCopy.copyName(of: schema))
        }
    }
}

// MARK: A typed test model

final class Person: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var email: String?
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Attribute var createdAt: Date?
    @Relationship(inverse: "people") var town: Town?
    @Relationship(inverse: "members") var clubs: Set<Club>
    override class var indexes: [[String]] { [["age"]] }
}

final class Town: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Attribute var population: Int = 0
    @Relationship(inverse: "town", deleteRule: .cascade) var people: Set<Person>
}

final class Club: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "clubs") var members: Set<Person>
}

/// Every attribute type.
final class Sample: ManagedObject {
    @Attribute var i: Int = 0
    @Attribute var i16: Int16 = 0
    @Attribute var i32: Int32 = 0
    @Attribute var i64: Int64 = 0
    @Attribute var d: Double = 0
    @Attribute var f: Float = 0
    @Attribute var b: Bool = false
    @Attribute var s: String = ""
    @Attribute var data: Data?
    @Attribute var date: Date?
    @Attribute var uuid: UUID?
    @Attribute var url: URL?
    @Attribute var decimal: Decimal?
    @Attribute var optionalInt: Int?
    @Attribute var optionalString: String?
}

class Shape: ManagedObject {
    @Attribute var label: String = ""
    override class var isAbstractEntity: Bool { self == Shape.self }
}
final class Circle: Shape {
    @Attribute var radius: Double = 0
}
final class Square: Shape {
    @Attribute var side: Double = 0
}

func makeTestModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(types: [Person.self, Town.self, Club.self, Sample.self, Circle.self, Square.self])
}

// MARK: Store helpers (the coordinator's package-level API, below contexts)

/// An insert of a new object with values by property name.
func rowInsert(_ entity: EntityDescription, _ values: [String: StoredValue], references: [String: ObjectID?] = [:]) -> RowInsert {
    var v = entity.initialValues
    for (name, value) in values {
        if let p = entity.propertiesByName[name] { v[p.slot] = value }
    }
    let refs = references.compactMap { name, target in entity.propertiesByName[name].map { RowReference(slot: $0.slot, target: target) } }
    return RowInsert(objectID: ObjectID.temporary(for: entity), values: v, references: refs)
}

/// Inserts objects and returns their permanent IDs in order.
@discardableResult
func insertObjects(_ coordinator: PersistentStoreCoordinator, _ inserts: [RowInsert]) throws -> [ObjectID] {
    var changes = StoreChangeSet()
    changes.inserts = inserts
    let result = try coordinator.save(changes)
    return result.insertedIDs
}

/// Values of a row by property name.
func named(_ row: StoreRow) -> [String: StoredValue] {
    var d: [String: StoredValue] = [:]
    for p in row.entity.storedProperties { d[p.name] = row.values[p.slot] }
    return d
}

extension StoreType: CustomTestStringConvertible {
    public var testDescription: String { description }
}

/// A coordinator with one store of `type` (SQLite in `dir`, PostgreSQL in a schema of the test).
func makeCoordinator(_ type: StoreType, in dir: TemporaryDirectory, model: ManagedObjectModel? = nil) throws -> PersistentStoreCoordinator {
    let c = PersistentStoreCoordinator(managedObjectModel: try model ?? makeTestModel())
    try c.addPersistentStore(type: type, at: try dir.storeURL(type, "store"))
    return c
}

/// Makes `change` in `context` and saves it: the save's error (nil when it succeeded).
func saveError(_ context: ManagedObjectContext, after change: () -> Void = {}) -> CoherenceError? {
    context.performAndWait { () -> CoherenceError? in
        change()
        do {
            try context.save()
            return nil
        } catch {
            return error as? CoherenceError
        }
    }
}
