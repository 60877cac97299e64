import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// More inferred changes (required → optional, Float → Double, an entity out from under its
/// parent, a relationship and its join table removed, a uniqueness constraint removed) and the
/// errors that name what cannot be inferred, each leaving the store byte for byte as it was.
extension MigrationTests {
    /// Items with a required title, a Float weight, an Integer 16 count and unique titles; tags
    /// (many-to-many); an abstract Thing above Gadget.
    static func catalogV1() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "weight", type: .float, defaultValue: Float(0)),
                    AttributeDescription(name: "count", type: .integer16, defaultValue: Int16(0)),
                    RelationshipDescription(name: "tags", destination: "Tag", inverse: "items", isToMany: true)
                ], uniquenessConstraints: [["name"]]),
            EntityDescription(
                name: "Tag",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "items", destination: "Item", inverse: "tags", isToMany: true)
                ]),
            EntityDescription(name: "Thing", isAbstract: true, properties: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(
                name: "Gadget", superentity: "Thing", properties: [AttributeDescription(name: "volts", type: .integer64, defaultValue: 0)])
        ])
    }

    static func fillCatalog(_ url: URL) throws {
        try withMigrationStore(try catalogV1(), at: url) { context in
            let red = try insertObject(context, "Tag", ["name": "red"])
            try insertObject(context, "Item", ["name": "cup", "weight": Float(0.25), "count": Int16(3)]).relate("tags", to: [red])
            try insertObject(context, "Item", ["name": "pot", "weight": Float(1.5), "count": Int16(7)]).relate("tags", to: [red])
            try insertObject(context, "Gadget", ["name": "lamp", "volts": 12])
            try context.save()
        }
    }

    @Test(arguments: storedTypes)
    func requiredToOptionalFloatToDoubleOutFromUnderAParentAndRemovals(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "c")
        try Self.fillCatalog(url)
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Item",
                properties: [
                    // Required → optional; Float → Double; Integer 16 → 32; tags and the
                    // uniqueness constraint removed.
                    AttributeDescription(name: "name", type: .string, isOptional: true),
                    AttributeDescription(name: "weight", type: .double, defaultValue: 0.0),
                    AttributeDescription(name: "count", type: .integer32, defaultValue: Int32(0))
                ]),
            // Tag removed; Gadget is a root entity, Thing is gone.
            EntityDescription(
                name: "Gadget",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "volts", type: .integer64, defaultValue: 0)
                ])
        ])
        try withMigrationStore(v2, at: url) { context in
            let items = try fetchByName(context, "Item")
            #expect(items.map(\.nameValue) == ["cup", "pot"])
            #expect(items.map { (try? $0.value(forKey: "weight")) as? Double } == [0.25, 1.5])
            #expect(items.map { (try? $0.value(forKey: "count")) as? Int32 } == [3, 7])
            let gadgets = try fetchByName(context, "Gadget")
            #expect(gadgets.map(\.nameValue) == ["lamp"])
            #expect(gadgets.map { (try? $0.value(forKey: "volts")) as? Int } == [12])
            // Optional now, and no longer unique.
            try insertObject(context, "Item", [:])
            try insertObject(context, "Item", ["name": "cup"])
            try context.save()
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Item")) == 4)
        }
        if type == .postgreSQL {
            let tables = try PostgreSQLTestServer.connection().execute(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 AND table_name NOT LIKE 'z\\_%' ORDER BY 1",
                [.text(PostgreSQLTestServer.schema(of: url))]
            ).rows
            #expect(tables == [[.text("Gadget")], [.text("Item")]])
            return
        }
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true)
        let tables = try c.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'Z\\_%' ESCAPE '\\'"
        )
        .rows { $0.string(0) }
        #expect(tables.sorted() == ["Gadget", "Item"])
    }

    /// Each change that cannot be inferred is a typed error naming it, and nothing is written.
    @Test(arguments: storedTypes, ["two entities from one", "one table from two", "another model", "a narrowing"])
    func whatCannotBeInferredIsNamedAndTheStoreIsUnchanged(_ type: StoreType, _ change: String) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "c")
        try Self.fillCatalog(url)
        let before = try migrationStoreContents(url)
        let tag = EntityDescription(name: "Tag", properties: [AttributeDescription(name: "name", type: .string)])
        let item = EntityDescription(name: "Item", properties: [AttributeDescription(name: "name", type: .string)])
        let expected: (code: CoherenceError.Code, entity: String?, property: String?)
        let v2: ManagedObjectModel
        switch change {
        case "two entities from one":
            // Both take Tag's rows.
            v2 = try ManagedObjectModel(entities: [
                item, tag,
                EntityDescription(name: "Label", properties: [AttributeDescription(name: "name", type: .string)], renamingIdentifier: "Tag")
            ])
            expected = (.migrationNotInferable, "Tag", nil)
        case "one table from two":
            // Item and Tag under one new root: their keys may collide.
            v2 = try ManagedObjectModel(entities: [
                EntityDescription(name: "Base", isAbstract: true, properties: [AttributeDescription(name: "name", type: .string)]),
                EntityDescription(name: "Item", superentity: "Base", properties: []),
                EntityDescription(name: "Tag", superentity: "Base", properties: [])
            ])
            expected = (.migrationNotInferable, "Base", nil)
        case "another model":
            v2 = try ManagedObjectModel(entities: [
                EntityDescription(name: "Invoice", properties: [AttributeDescription(name: "total", type: .double, defaultValue: 0.0)])
            ])
            expected = (.storeIncompatible, nil, nil)
        default:
            v2 = try ManagedObjectModel(entities: [
                EntityDescription(
                    name: "Item",
                    properties: [
                        AttributeDescription(name: "name", type: .string),
                        AttributeDescription(name: "count", type: .integer16, defaultValue: Int16(0)),
                        AttributeDescription(name: "weight", type: .integer32, defaultValue: Int32(0))
                    ]),
                tag
            ])
            expected = (.migrationNotInferable, "Item", "weight")
        }
        let error = #expect(throws: CoherenceError.self) { try withMigrationStore(v2, at: url) { _ in } }
        #expect(error?.code == expected.code)
        if let entity = expected.entity { #expect(error?.entityName == entity || error?.message.contains("'\(entity)'") == true) }
        if let property = expected.property { #expect(error?.propertyName == property) }
        #expect(error?.store == type.location(of: url))
        #expect(try migrationStoreContents(url) == before)
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: type, at: url)
        #expect(try Self.catalogV1().isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }
}
