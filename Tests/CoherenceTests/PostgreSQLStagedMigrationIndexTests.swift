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
}
