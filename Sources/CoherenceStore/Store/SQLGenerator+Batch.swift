import Foundation

/// The statements of batch requests (see `BatchExecutor`): they work on many rows at once, the
/// rows' keys bound as one list parameter (``keyList(_:)``).
extension SQLGenerator {
    /// Keys as the value of a list parameter (`SQLDialect.listParameter()`): a JSON array.
    package func keyList(_ keys: [Int64]) -> String {
        var text = "["
        text.reserveCapacity(keys.count * 8 + 2)
        var first = true
        for k in keys {
            if !first { text.append(",") }
            first = false
            text.append(String(k))
        }
        text.append("]")
        return text
    }

    /// UPDATE of some columns of the rows whose keys are bound as one list; parameters: the
    /// values in `properties` order, then the key list. Every row's version moves on by one.
    package func updateRows(_ entity: EntityDescription, properties: [PropertyDescription]) -> String {
        let sets = properties.map { "\(column($0)) = ?" } + ["Z_OPT = Z_OPT + 1"]
        return "UPDATE \(table(entity)) SET \(sets.joined(separator: ", ")) WHERE Z_PK IN (\(dialect.listParameter()))"
    }

    /// DELETE of the rows whose keys are bound as one list.
    package func deleteRows(_ entity: EntityDescription) -> String {
        "DELETE FROM \(table(entity)) WHERE Z_PK IN (\(dialect.listParameter()))"
    }

    /// The keys and entity numbers of those rows of `entity` (and its sub-entities) whose keys
    /// are bound as one list.
    package func selectKeys(_ entity: EntityDescription) -> String {
        "SELECT t0.Z_PK, t0.Z_ENT FROM \(table(entity)) AS t0 WHERE t0.Z_PK IN (\(dialect.listParameter()))"
            + (entityRestriction(entity, includesSubentities: true, alias: "t0").map { " AND " + $0 } ?? "")
    }

    /// DELETE of a join table's rows whose source (or, when `destinations`, destination) key is
    /// in the bound list; nil when the relationship has no join table.
    package func deleteJoinRows(_ r: RelationshipDescription, destinations: Bool) -> String? {
        guard let (jt, src, dst) = joinTable(r) else { return nil }
        return "DELETE FROM \(jt) WHERE \(destinations ? dst : src) IN (\(dialect.listParameter()))"
    }

    /// The sources of a join-table relationship for a list of destination keys. Result
    /// columns: destination key, source key, source entity number.
    package func selectJoinSources(_ r: RelationshipDescription) -> String? {
        guard let (jt, src, dst) = joinTable(r), let source = r.entity else { return nil }
        return """
            SELECT j.\(dst), s.Z_PK, s.Z_ENT FROM \(jt) AS j JOIN \(table(source)) AS s ON s.Z_PK = j.\(src) \
            WHERE j.\(dst) IN (\(dialect.listParameter()))
            """
    }
}
