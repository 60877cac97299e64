import Foundation

/// The statements of batch requests (see `BatchExecutor`): they work on many rows at once, the
/// rows' keys bound as one list parameter (``keyList(_:)``).
extension SQLGenerator {
    /// Keys as the value of a list parameter (`SQLDialect.inList(_:)`).
    package func keyList(_ keys: [Int64]) -> String { dialect.keyList(keys) }

    /// The keys and entity numbers of the rows a fetch matches, each followed by its values of
    /// `foreignKeys` (columns of the fetched table). The entity number of a hierarchy of one
    /// entity is a constant, so that an index the predicate uses can answer without reading
    /// the rows when no foreign key is asked for.
    package func selectKeys(
        _ fetch: StoreFetch, foreignKeys: [RelationshipDescription], storeIdentifier: UUID
    ) throws(CoherenceError) -> (sql: String, bindings: [StoredValue]) {
        let root = fetch.entity.rootEntity
        let number = root.subentities.isEmpty ? "\(root.entityNumber)" : entityNumber(alias: "t0")
        let columns = (["t0.Z_PK", number] + foreignKeys.map { "t0." + column($0) }).joined(separator: ", ")
        return try select(fetch, plan: nil, storeIdentifier: storeIdentifier, keyColumns: columns)
    }

    /// DELETE of the rows a fetch matches (the predicate evaluated again: run it before
    /// anything else changes, after ``selectKeys(_:foreignKeys:storeIdentifier:)`` read them).
    /// The predicate filters the DELETE itself when it needs no join and the fetch no order or
    /// limit; else the DELETE takes the keys of a SELECT.
    package func deleteRows(_ fetch: StoreFetch, storeIdentifier: UUID) throws(CoherenceError) -> (sql: String, bindings: [StoredValue]) {
        if fetch.sortKeys.isEmpty && fetch.limit == nil && fetch.offset == 0 {
            let builder = QueryBuilder(generator: self, rootEntity: fetch.entity, storeIdentifier: storeIdentifier)
            let whereSQL = try whereClause(fetch, builder)
            if builder.joins(forScope: 0).isEmpty {
                return ("DELETE FROM \(table(fetch.entity)) AS t0\(whereSQL)", builder.bindings)
            }
        }
        let (keys, bindings) = try select(fetch, plan: nil, storeIdentifier: storeIdentifier, keyColumns: "t0.Z_PK")
        return ("DELETE FROM \(table(fetch.entity)) WHERE Z_PK IN (\(keys))", bindings)
    }

    /// INSERT of `rows` rows of `entity` for a batch insert: for each row the key, then the
    /// stored attributes (in `attributes` order); the entity number and version 1 are written in the statement, and
    /// foreign keys are left NULL. On PostgreSQL a row a unique index refuses is not inserted
    /// (no error, which would end the transaction: the changed-row count says so);
    /// `onConflict: false` leaves that clause out (a table with a deferrable unique constraint
    /// refuses it).
    package func batchInsert(
        _ entity: EntityDescription, attributes: [AttributeDescription], rows: Int = 1, onConflict conflicts: Bool = true
    ) -> String {
        let cols = ["Z_PK", "Z_ENT", "Z_OPT"] + attributes.map(column)
        let values = "(" + (["?", "\(storedNumber(entity))", "1"] + attributes.map { _ in "?" }).joined(separator: ", ") + ")"
        let onConflict = dialect == .postgreSQL && conflicts ? " ON CONFLICT DO NOTHING" : ""
        let allValues = Array(repeating: values, count: Swift.max(rows, 1)).joined(separator: ", ")
        return "INSERT INTO \(table(entity)) (\(cols.joined(separator: ", "))) VALUES \(allValues)\(onConflict)"
    }

    /// UPDATE of some columns of the rows whose keys are bound as one list; parameters: the
    /// values in `properties` order, then the key list. Every row's version moves on by one.
    package func updateRows(_ entity: EntityDescription, properties: [PropertyDescription]) -> String {
        let sets = properties.map { "\(column($0)) = ?" } + [nextVersion]
        return "UPDATE \(table(entity)) SET \(sets.joined(separator: ", ")) WHERE \(dialect.inList("Z_PK"))"
    }

    /// DELETE of the rows whose keys are bound as one list.
    package func deleteRows(_ entity: EntityDescription) -> String {
        "DELETE FROM \(table(entity)) WHERE \(dialect.inList("Z_PK"))"
    }

    /// The keys and entity numbers of those rows of `entity` (and its sub-entities) whose keys
    /// are bound as one list.
    package func selectKeys(_ entity: EntityDescription) -> String {
        "SELECT t0.Z_PK, \(entityNumber(alias: "t0")) FROM \(table(entity)) AS t0 WHERE \(dialect.inList("t0.Z_PK"))"
            + (entityRestriction(entity, includesSubentities: true, alias: "t0").map { " AND " + $0 } ?? "")
    }

    /// DELETE of a join table's rows whose source (or, when `destinations`, destination) key is
    /// in the bound list; nil when the relationship has no join table.
    package func deleteJoinRows(_ r: RelationshipDescription, destinations: Bool) -> String? {
        guard let (jt, src, dst) = joinTable(r) else { return nil }
        return "DELETE FROM \(jt) WHERE \(dialect.inList(destinations ? dst : src))"
    }
}
