import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A relationship that becomes one-to-one keeps at most one object on each side: of the objects
/// that pointed to the same one, the one with the smallest key.
extension MigrationTests {
    /// Person.town (to-one) and Town.people (to-many) become one-to-one: Oslo had Ada and Bob.
    @Test(arguments: storedTypes)
    func aToManyWhoseInverseIsToOneBecomesOneToOne(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try withMigrationStore(try Self.v1(), at: url) { context in
            let oslo = try insertObject(context, "Town", ["name": "Oslo"])
            let rome = try insertObject(context, "Town", ["name": "Rome"])
            try insertObject(context, "Person", ["name": "Ada"]).relate("town", to: [oslo])
            try context.save()
            try insertObject(context, "Person", ["name": "Bob"]).relate("town", to: [oslo])
            try insertObject(context, "Person", ["name": "Cy"]).relate("town", to: [rome])
            try context.save()
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Person",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "town", destination: "Town", inverse: "people")
                ]),
            EntityDescription(
                name: "Town",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "people", destination: "Person", inverse: "town")
                ])
        ])
        try withMigrationStore(v2, at: url) { context in
            let towns = try fetchByName(context, "Town")
            let people = try fetchByName(context, "Person")
            #expect(towns.map { $0.related("people").map(\.nameValue) } == [["Ada"], ["Cy"]])
            #expect(people.map { $0.related("town").map(\.nameValue) } == [["Oslo"], [], ["Rome"]])
        }
    }

    /// Item.tags and Tag.items (many-to-many) become one-to-one: cup and pot were both red.
    @Test(arguments: storedTypes)
    func aManyToManyBecomesOneToOne(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "c")
        try Self.fillCatalog(url)
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "tag", destination: "Tag", inverse: "item", renamingIdentifier: "tags")
                ]),
            EntityDescription(
                name: "Tag",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "item", destination: "Item", inverse: "tag", renamingIdentifier: "items")
                ])
        ])
        try withMigrationStore(v2, at: url) { context in
            let items = try fetchByName(context, "Item")
            let tags = try fetchByName(context, "Tag")
            #expect(items.map { $0.related("tag").map(\.nameValue) } == [["red"], []])
            #expect(tags.map { $0.related("item").map(\.nameValue) } == [["cup"]])
        }
    }
}
