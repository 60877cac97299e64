import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A staged migration of a PostgreSQL store whose tables have indexes: the schema's copy gets
/// them (made on the copy's tables, not again on the store's), and they work after the copy took
/// the store's place.
@Suite("PostgreSQL: staged migration of indexes")
struct PostgreSQLStagedMigrationIndexTests {
    /// Person with an index on `age`, a unique `email` and a to-one `town` (its key column is
    /// indexed too); `extra` is added at the next version.
    static func model(_ extra: [PropertyDescription] = []) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Person",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "email", type: .string),
                    AttributeDescription(name: "age", type: .integer64, defaultValue: Int64(0)),
                    RelationshipDescription(name: "town", destination: "Town", inverse: "people")
                ] + extra, uniquenessConstraints: [["email"]], indexes: [["age"]]),
            EntityDescription(
                name: "Town",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "people", destination: "Person", inverse: "town", isToMany: true)
                ])
        ])
    }

    @Test(.postgreSQLServer)
    func theCopyKeepsTheIndexesAndTheStoreMigrates() throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL("indexes")
        let v1 = try Self.model()
        try withMigrationStore(v1, at: url) { context in
            let oslo = try insertObject(context, "Town", ["name": "Oslo"])
            try insertObject(context, "Person", ["name": "Ada", "email": "ada@x", "age": Int64(36)]).relate("town", to: [oslo])
            try context.save()
        }
        let v2 = try Self.model([AttributeDescription(name: "nickname", type: .string, isOptional: true)])
        var stage = CustomMigrationStage(migratingFrom: v1, to: v2, label: "nicknames")
        stage.didMigrateHandler = { context in
            for person in try context.fetch(FetchRequest<ManagedObject>(entityName: "Person")) {
                try person.setValue("A", forKey: "nickname")
            }
        }
        let options = StoreOptions(stagedMigrationManager: StagedMigrationManager([stage]))
        let people = try withMigrationStore(v2, at: url, options: options) { context in
            try fetchByName(context, "Person").map { "\($0.nameValue) \(try $0.value(forKey: "nickname") as? String ?? "-")" }
        }
        #expect(people == ["Ada A"])
        let dump = try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url))
        #expect(dump.contains("\"Z_Person_age\"") && dump.contains("\"Z_Person_UNIQUE_email\""))
        #expect(try !migrationCopyLeft(url, in: dir))
        // The unique index still refuses a second person with the same email.
        let error = try withMigrationStore(v2, at: url) { context in
            try insertObject(context, "Person", ["name": "Bea", "email": "ada@x"])
            return saveError(context)
        }
        #expect(error?.code == .conflict)
    }

    /// A hierarchy (its `Z_ENT` index), sub-entities' uniqueness constraints (partial unique
    /// indexes) and a to-many without inverse (a join table): migrated in stages, then by
    /// inference again.
    @Test(.postgreSQLServer)
    func aHierarchysIndexesSurviveAStagedThenAnInferredMigration() throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL("zoo")
        try MigrationHierarchyTests.fillZoo(url)
        let v1 = try MigrationHierarchyTests.zoo()
        func v2(_ extra: [PropertyDescription] = []) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [
                EntityDescription(
                    name: "Owner",
                    properties: [
                        AttributeDescription(name: "name", type: .string),
                        RelationshipDescription(name: "pet", destination: "Animal"),
                        RelationshipDescription(name: "friends", destination: "Animal", isToMany: true)
                    ] + extra),
                EntityDescription(name: "Animal", properties: [AttributeDescription(name: "name", type: .string)]),
                EntityDescription(
                    name: "Cat", superentity: "Animal",
                    properties: [AttributeDescription(name: "lives", type: .integer16, defaultValue: Int16(9))],
                    uniquenessConstraints: [["name"]]),
                EntityDescription(
                    name: "Dog", superentity: "Animal", properties: [AttributeDescription(name: "sound", type: .string)],
                    uniquenessConstraints: [["name"]])
            ])
        }
        var stage = CustomMigrationStage(migratingFrom: v1, to: try v2(), label: "unique names")
        stage.willMigrateHandler = { context in
            let animals = try context.count(for: FetchRequest<ManagedObject>(entityName: "Animal"))
            #expect(animals == 2)
        }
        let options = StoreOptions(stagedMigrationManager: StagedMigrationManager([stage]))
        try withMigrationStore(try v2(), at: url, options: options) { context in
            #expect(try fetchByName(context, "Animal").map(\.nameValue) == ["Rex", "Tom"])
            #expect(try fetchByName(context, "Owner").map { $0.related("friends").map(\.nameValue).sorted() } == [["Rex", "Tom"], []])
            try insertObject(context, "Dog", ["name": "Tom", "sound": "woof"])
            try context.save()
            try insertObject(context, "Cat", ["name": "Tom"])
            #expect(saveError(context)?.code == .conflict)
        }
        let v3 = try v2([AttributeDescription(name: "age", type: .integer64, defaultValue: Int64(1))])
        let (ages, animals) = try withMigrationStore(v3, at: url) { context in
            (try fetchByName(context, "Owner").map { (try? $0.value(forKey: "age")) as? Int }, try fetchByName(context, "Animal").count)
        }
        #expect(ages == [1, 1] && animals == 3)
        let dump = try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url))
        #expect(dump.contains("\"Z_Cat_UNIQUE_name\"") && dump.contains("\"Z_Dog_UNIQUE_name\""))
    }
}
