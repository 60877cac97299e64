import Foundation

/// Columns that a store's tables lack although the store was made for the same model version:
/// the foreign-key column of a to-one relationship that is its own inverse (`partner` ↔
/// `partner`). The model's version hash describes the entities, not how they are stored, so a
/// store whose table has no such column opens as a store of its model; opening a SQLite or
/// PostgreSQL store then adds the column (every row without a partner) and its index, and
/// records the relationship as a foreign key in the store's schema (``StoredSchema``), in the
/// transaction of the open's other work.
package enum StoreLayoutRepair {
    /// The to-one relationships that are their own inverse, declared by one of `entities`, with
    /// their entities.
    static func relationships(of entities: [EntityDescription]) -> [(entity: EntityDescription, relationship: RelationshipDescription)] {
        var result: [(entity: EntityDescription, relationship: RelationshipDescription)] = []
        for e in entities {
            for case let r as RelationshipDescription in e.ownProperties
            where !r.isTransient && !r.isToMany && r.inverseRelationship === r && r.hasForeignKey {
                result.append((e, r))
            }
        }
        return result
    }

    /// The relationships of ``relationships(of:)`` whose column the store on `database` lacks
    /// (a table that is not there is left to the rest of the open).
    package static func missingColumns(
        on database: any MigrationDatabase, entities: [EntityDescription], generator: SQLGenerator
    ) throws -> [(entity: EntityDescription, relationship: RelationshipDescription)] {
        let candidates = relationships(of: entities)
        guard !candidates.isEmpty else { return [] }
        var columnsByTable: [String: Set<String>] = [:]
        var missing: [(entity: EntityDescription, relationship: RelationshipDescription)] = []
        for (e, r) in candidates {
            let table = generator.naming.tableName(e.rootEntity)
            let columns = try columnsByTable[table] ?? Set(database.texts(generator.migrationColumnsOfTable, [.text(table)]))
            columnsByTable[table] = columns
            if !columns.isEmpty && !columns.contains(generator.naming.columnName(r)) { missing.append((e, r)) }
        }
        return missing
    }

    /// Adds the missing columns (see ``missingColumns(on:entities:generator:)``) and their
    /// indexes on `database`, inside the caller's transaction.
    /// - Returns: whether a column was added.
    @discardableResult
    package static func addMissingColumns(on database: any MigrationDatabase, entities: [EntityDescription], generator: SQLGenerator)
        throws -> Bool
    {
        let missing = try missingColumns(on: database, entities: entities, generator: generator)
        for (e, r) in missing {
            try database.execute("ALTER TABLE \(generator.table(e)) ADD COLUMN \(generator.column(r)) \(generator.dialect.keyType)")
            try database.execute(generator.foreignKeyIndex(r, of: e))
        }
        return !missing.isEmpty
    }

    /// The recorded schema (`json`, metadata's `schema`) with the relationships of
    /// ``relationships(of:)`` kept as foreign keys; nil when it records them so already, or
    /// records no schema.
    package static func repairedSchema(_ json: String?, entities: [EntityDescription]) -> String? {
        let names = Set(relationships(of: entities).map { "\($0.entity.name).\($0.relationship.name)" })
        guard !names.isEmpty, var schema = StoredSchema(json: json) else { return nil }
        var changed = false
        for i in schema.entities.indices {
            let entity = schema.entities[i].name
            for j in schema.entities[i].relationships.indices {
                let stored = schema.entities[i].relationships[j]
                guard stored.storage != "fk", !stored.isToMany, names.contains("\(entity).\(stored.name)") else { continue }
                schema.entities[i].relationships[j].storage = "fk"
                schema.entities[i].relationships[j].joinTable = nil
                schema.entities[i].relationships[j].sourceIsFirst = nil
                changed = true
            }
        }
        return changed ? schema.json : nil
    }
}
