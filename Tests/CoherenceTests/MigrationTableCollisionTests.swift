import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// SQLite's table names ignore case: an entity added by a migration whose table is another
/// entity's in other letters cannot have a table of its own, so the migration is refused (as a
/// new store of that model is) and the store is left as it was.
@Suite("Migrations: a new table named as another in other letters (SQLite)")
struct MigrationTableCollisionTests {
    @Test func anEntityWhoseTableIsAnotherInOtherLettersIsRefusedAndTheStoreIsUnchanged() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("m.sqlite")
        let v1 = try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", properties: [AttributeDescription(name: "name", type: .string)])
        ])
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", properties: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(name: "item", properties: [AttributeDescription(name: "title", type: .string, isOptional: true)])
        ])
        try withMigrationStore(v1, at: url) { context in
            try insertObject(context, "Item", ["name": "cup"])
            try context.save()
        }
        let before = try migrationStoreContents(url)
        // It used to migrate, recording the new version, with "item" sharing Item's table:
        // each save of an item then failed.
        let error = #expect(throws: CoherenceError.self) { try withMigrationStore(v2, at: url) { _ in } }
        #expect(error?.code == .migrationFailed)
        #expect(try migrationStoreContents(url) == before)
        let names = try withMigrationStore(v1, at: url) { context in try fetchByName(context, "Item").map(\.nameValue) }
        #expect(names == ["cup"])
    }
}
