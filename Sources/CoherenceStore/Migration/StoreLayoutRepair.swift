import Foundation

/// Columns that a store's tables lack although the store was made for the same model version:
/// the foreign-key column of a to-one relationship that is its own inverse (`partner` ↔
/// `partner`). The model's version hash describes the entities, not how they are stored, so a
/// store whose table has no such column opens as a store of its model; opening a SQLite or
/// PostgreSQL store then adds the column (every row without a partner) and its index, and
/// records the relationship as a foreign key in the store's schema (``StoredSchema``), in the
/// transaction of the open's other work.
///
/// The same open makes again a unique index of the model's uniqueness constraints that another
/// program dropped, or replaced by an index of the same name that does not keep the constraint
/// (not unique, partial, on other columns): the store finds uniqueness conflicts through those
/// indexes, and without one it saved duplicates silently. When the rows already break the constraint, the open fails
/// (`.storeIncompatible`, naming the duplicates) and the store is left as it was.
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

    /// The to-one relationships declared by one of `entities` whose order column (the places
    /// of the destinations of their ordered inverse, ``RelationshipDescription/hasOrderColumn``)
    /// the store on `database` lacks: a store made before Coherence kept that order. A table
    /// that is not there, or that lacks the foreign key too, is left to the rest of the open.
    package static func missingOrderColumns(
        on database: any MigrationDatabase, entities: [EntityDescription], generator: SQLGenerator
    ) throws -> [RelationshipDescription] {
        var columnsByTable: [String: Set<String>] = [:]
        var missing: [RelationshipDescription] = []
        for e in entities {
            for case let r as RelationshipDescription in e.ownProperties where r.hasOrderColumn {
                guard let order = generator.orderColumnName(r) else { continue }
                let table = generator.naming.tableName(e.rootEntity)
                let columns = try columnsByTable[table] ?? Set(database.texts(generator.migrationColumnsOfTable, [.text(table)]))
                columnsByTable[table] = columns
                if columns.contains(generator.naming.columnName(r)) && !columns.contains(order) { missing.append(r) }
            }
        }
        return missing
    }

    /// Whether the store on `database` lacks a column that ``addMissingColumns(on:entities:generator:)``
    /// adds.
    package static func lacksColumns(on database: any MigrationDatabase, entities: [EntityDescription], generator: SQLGenerator)
        throws -> Bool
    {
        try !missingColumns(on: database, entities: entities, generator: generator).isEmpty
            || !missingOrderColumns(on: database, entities: entities, generator: generator).isEmpty
    }

    /// Adds the missing columns (see ``missingColumns(on:entities:generator:)``) and their
    /// indexes on `database`, inside the caller's transaction; and the missing order columns
    /// (``missingOrderColumns(on:entities:generator:)``), each destination numbered in the
    /// order it was read before (by primary key among its source's destinations).
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
        let orders = try missingOrderColumns(on: database, entities: entities, generator: generator)
        for r in orders {
            guard let e = r.entity, let order = generator.orderColumn(r), let numbering = generator.numberOrder(r) else { continue }
            try database.execute("ALTER TABLE \(generator.table(e)) ADD COLUMN \(order) \(generator.dialect.keyType)")
            try database.execute(numbering)
        }
        return !missing.isEmpty || !orders.isEmpty
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

    /// The statements making the unique indexes of `entities`' uniqueness constraints that the
    /// store on `database` lacks, with their entity and constraint (tables that are not there
    /// are left to the rest of the open). An index of the name that does not keep the constraint
    /// — another program made it again not unique, partial, on other columns or on another table
    /// — is lacking too: `drops` are the statements that remove it first.
    package static func missingUniqueIndexes(
        on database: any MigrationDatabase, entities: [EntityDescription], generator: SQLGenerator
    ) throws -> [(entity: EntityDescription, constraint: [String], statement: String, drops: [String])] {
        guard entities.contains(where: { !$0.uniquenessConstraints.isEmpty }) else { return [] }
        var existing: [String: IndexShape] = [:]
        for row in try database.rows(generator.migrationIndexShapes, []) {
            guard row.count == 6, case .text(let name) = row[0], case .text(let table) = row[1] else { continue }
            func flag(_ value: StoredValue) -> Bool { if case .integer(let n) = value { return n != 0 } else { return false } }
            let condition = if case .text(let text) = row[5] { IndexShape.condition(text, generator.dialect) } else { String?.none }
            guard case .text(let columns) = row[4] else {
                existing[name] = IndexShape(table: table, isUnique: false, isPartial: flag(row[3]), columns: [], condition: condition)
                continue
            }
            existing[name] = IndexShape(
                table: table, isUnique: flag(row[2]), isPartial: flag(row[3]),
                columns: columns.split(separator: ",", omittingEmptySubsequences: false).map(String.init), condition: condition)
        }
        let statements = generator.createSchema(for: entities)
        let q = generator.dialect.quote
        var missing: [(entity: EntityDescription, constraint: [String], statement: String, drops: [String])] = []
        for e in entities {
            for constraint in e.uniquenessConstraints {
                let name = "Z_\(e.name)_UNIQUE_\(constraint.joined(separator: "_"))"
                let prefix = "CREATE UNIQUE INDEX \(q(name)) ON "
                guard let made = statements.first(where: { $0.hasPrefix(prefix) }) else { continue }
                let table = generator.naming.tableName(e.rootEntity)
                let stored = storedName(name, generator.dialect)
                var drops: [String] = []
                if let shape = existing[stored] {
                    let expected = IndexShape(
                        table: table, isUnique: true, isPartial: made.contains(" WHERE "),
                        columns: constraint.compactMap { e.propertiesByName[$0] }.map { generator.naming.columnName($0) },
                        condition: IndexShape.expectedCondition(made: made, numbers: e.descendantNumbers, generator: generator))
                    guard !shape.keeps(expected, ignoringCase: generator.dialect == .sqlite) else { continue }
                    // (On PostgreSQL the impostor may stand for a constraint, which owns it.)
                    if generator.dialect == .postgreSQL {
                        drops.append("ALTER TABLE \(q(shape.table)) DROP CONSTRAINT IF EXISTS \(q(stored))")
                    }
                    drops.append("DROP INDEX IF EXISTS \(q(stored))")
                }
                let statement = made.replacingOccurrences(of: "CREATE UNIQUE INDEX ", with: "CREATE UNIQUE INDEX IF NOT EXISTS ")
                guard try !database.texts(generator.migrationColumnsOfTable, [.text(table)]).isEmpty else { continue }
                missing.append((e, constraint, statement, drops))
            }
        }
        return missing
    }

    /// What decides whether an index keeps a uniqueness constraint.
    private struct IndexShape {
        var table: String
        var isUnique: Bool
        var isPartial: Bool
        var columns: [String]
        /// The condition of a partial index (its `WHERE`), without white space and in lowercase;
        /// nil for a whole index.
        var condition: String?

        /// Whether this index keeps the constraint of `expected` (the index the model makes).
        func keeps(_ expected: IndexShape, ignoringCase: Bool) -> Bool {
            let fold = { (names: [String]) in ignoringCase ? names.map { $0.lowercased() } : names }
            // (A whole index where a partial one is expected keeps the constraint, more strictly:
            // Core Data makes one so for a sub-entity's constraint. A partial one keeps it only
            // with the expected condition: another one leaves out rows the constraint holds.)
            return isUnique && (!isPartial || (expected.isPartial && condition != nil && condition == expected.condition))
                && fold([table]) == fold([expected.table]) && fold(columns) == fold(expected.columns)
        }

        /// The condition of a partial index from what the database reports (see
        /// `SQLGenerator.migrationIndexShapes`): the text after the last `WHERE` of a SQLite
        /// statement, PostgreSQL's condition as it is; nil when there is none.
        static func condition(_ text: String, _ dialect: SQLDialect) -> String? {
            var condition = Substring(text)
            if dialect == .sqlite {
                guard let r = text.range(of: " WHERE ", options: [.caseInsensitive, .backwards]) else { return nil }
                condition = text[r.upperBound...]
            }
            let folded = String(condition.filter { !$0.isWhitespace }).lowercased()
            return folded.isEmpty ? nil : folded
        }

        /// The condition (as ``condition(_:_:)`` gives it) of the index the model makes by
        /// `made`, of an entity whose rows have the entity numbers `numbers`; nil for a whole
        /// index. PostgreSQL writes `Z_ENT IN (3)` back as `(z_ent = 3)` and `Z_ENT IN (3, 4)`
        /// as `(z_ent = ANY (ARRAY[(3)::bigint, (4)::bigint]))`.
        static func expectedCondition(made: String, numbers: [Int], generator: SQLGenerator) -> String? {
            guard made.contains(" WHERE ") else { return nil }
            guard generator.dialect == .postgreSQL else { return condition(made, .sqlite) }
            let stored = numbers.map { String(generator.naming.storedNumber($0)) }
            let text =
                stored.count == 1
                ? "(z_ent = \(stored[0]))" : "(z_ent = ANY (ARRAY[\(stored.map { "(\($0))::bigint" }.joined(separator: ", "))]))"
            return condition(text, .postgreSQL)
        }
    }

    /// The names of the unique indexes that `entities`' uniqueness constraints make, as the
    /// database keeps them.
    package static func uniqueIndexNames(of entities: [EntityDescription], dialect: SQLDialect) -> [String] {
        entities.flatMap { e in
            e.uniquenessConstraints.map { storedName("Z_\(e.name)_UNIQUE_\($0.joined(separator: "_"))", dialect) }
        }
    }

    /// An index name as the database keeps it: PostgreSQL cuts names to 63 bytes (whole
    /// characters).
    private static func storedName(_ name: String, _ dialect: SQLDialect) -> String {
        guard dialect == .postgreSQL, name.utf8.count > 63 else { return name }
        var result = ""
        for scalar in name.unicodeScalars {
            guard result.utf8.count + String(scalar).utf8.count <= 63 else { break }
            result.unicodeScalars.append(scalar)
        }
        return result
    }

    /// Makes the missing unique indexes (see ``missingUniqueIndexes(on:entities:generator:)``)
    /// on `database`, inside the caller's transaction.
    /// - Returns: whether an index was made.
    /// - Throws: `.storeIncompatible` naming the duplicates when the rows break a constraint whose
    ///   index is missing (checked before any index is made).
    @discardableResult
    package static func addMissingUniqueIndexes(
        on database: any MigrationDatabase, entities: [EntityDescription], generator: SQLGenerator, store: String
    ) throws -> Bool {
        let missing = try missingUniqueIndexes(on: database, entities: entities, generator: generator)
        let q = generator.dialect.quote
        for (e, constraint, _, _) in missing {
            let columns = constraint.compactMap { e.propertiesByName[$0] }.map { q(generator.naming.columnName($0)) }
            let numbers = e.descendantNumbers.map { String(generator.naming.storedNumber($0)) }.joined(separator: ", ")
            let duplicates = try generator.duplicateGroups(
                in: generator.table(e.rootEntity), columns: columns, numbers: numbers, on: database)
            if !duplicates.isEmpty {
                throw CoherenceError(
                    .storeIncompatible,
                    "The store lacks the unique index of '\(e.name)' [\(constraint.joined(separator: ", "))] (another program dropped it, or made it again without the constraint), "
                        + "and its rows break that constraint: \(duplicates.joined(separator: "; ")). It was left as it was.",
                    entity: e.name, property: constraint.first, store: store)
            }
        }
        for (_, _, statement, drops) in missing {
            for drop in drops { try database.execute(drop) }
            try database.execute(statement)
        }
        return !missing.isEmpty
    }
}
