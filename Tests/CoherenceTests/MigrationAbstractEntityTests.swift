import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// An entity that becomes abstract: its rows could not be objects (no object of an abstract
/// entity can be made), and the inferred migration "succeeded" and fetched objects of the
/// abstract entity. It now fails, naming the entity, and leaves the store as it was; an entity
/// made abstract without rows migrates.
@Suite("Migrations: an entity made abstract")
struct MigrationAbstractEntityTests {
    /// The first version's Person made abstract, with a new sub-entity Student.
    static func v2() throws -> ManagedObjectModel {
        let old = MigrationTests.person(indexes: [["age"]])
        let person = EntityDescription(name: "Person", isAbstract: true, properties: old.ownProperties, indexes: [["age"]])
        let student = EntityDescription(
            name: "Student", superentity: "Person", properties: [AttributeDescription(name: "school", type: .string, isOptional: true)])
        return try ManagedObjectModel(entities: [person, student, MigrationTests.town()])
    }

    @Test(arguments: storedTypes)
    func rowsOfTheEntityStopTheMigration(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try MigrationTests.fill(url)
        let before = try MigrationTests.snapshot(url)
        let error = #expect(throws: CoherenceError.self) {
            try withMigrationStore(try Self.v2(), at: url) { _ in }
        }
        #expect(error?.code == .migrationNotInferable)
        #expect(error?.entityName == "Person")
        #expect(error?.message.contains("3 rows") == true)
        #expect(try MigrationTests.snapshot(url) == before)
        let names = try withMigrationStore(try MigrationTests.v1(), at: url) { context in
            try fetchByName(context, "Person").map(\.nameValue)
        }
        #expect(names == ["Ada", "Bob", "Cy"])
    }

    @Test(arguments: storedTypes)
    func withoutRowsItMigrates(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try withMigrationStore(try MigrationTests.v1(), at: url) { context in
            try insertObject(context, "Town", ["name": "Oslo"])
            try context.save()
        }
        let (students, towns) = try withMigrationStore(try Self.v2(), at: url) { context in
            try insertObject(context, "Student", ["name": "Ada", "age": Int16(20), "school": "Tech"])
            try context.save()
            return (
                try fetchByName(context, "Person").map { "\($0.entity.name):\($0.nameValue)" },
                try fetchByName(context, "Town").map(\.nameValue)
            )
        }
        #expect(students == ["Student:Ada"])
        #expect(towns == ["Oslo"])
    }
}
