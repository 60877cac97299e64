import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A relationship kept from one version to the next that now leads to an entity whose rows come
/// from another table: its keys name unrelated objects there, so the migration is refused.
@Suite("Migrations: a relationship that leads to another entity")
struct MigrationDestinationTests {
    /// Owners whose pet and friends lead to `destination`; Dog and Cat, each a table of its own.
    static func model(_ destination: String) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Owner",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "pet", destination: destination),
                    RelationshipDescription(name: "friends", destination: destination, isToMany: true)
                ]),
            EntityDescription(name: "Dog", properties: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(name: "Cat", properties: [AttributeDescription(name: "name", type: .string)])
        ])
    }

    @Test(arguments: storedTypes)
    func aRelationshipLeadingToAnEntityOfAnotherTableIsNotInferable(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try withMigrationStore(try Self.model("Dog"), at: url) { context in
            // Tom has the key Rex has in his own table.
            try insertObject(context, "Cat", ["name": "Tom"])
            let rex = try insertObject(context, "Dog", ["name": "Rex"])
            let ann = try insertObject(context, "Owner", ["name": "Ann"])
            ann.relate("pet", to: [rex])
            ann.relate("friends", to: [rex])
            try context.save()
        }
        let before = try migrationStoreContents(url)
        let error = #expect(throws: CoherenceError.self) { try withMigrationStore(try Self.model("Cat"), at: url) { _ in } }
        #expect(error?.code == .migrationNotInferable)
        #expect(error?.entityName == "Owner" && error?.propertyName == "pet")
        #expect(try migrationStoreContents(url) == before)
        // Still at its version, with Rex.
        let pets = try withMigrationStore(try Self.model("Dog"), at: url) { context in
            try fetchByName(context, "Owner").map { $0.related("pet").map(\.nameValue) + $0.related("friends").map(\.nameValue) }
        }
        #expect(pets == [["Rex", "Rex"]])
    }
}
