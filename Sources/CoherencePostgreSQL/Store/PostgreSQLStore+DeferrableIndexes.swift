import Foundation

/// The store's tables that have a unique or exclusion constraint checked later than its
/// statement (`DEFERRABLE`: none of Coherence's own, but another program may add one).
/// PostgreSQL refuses `INSERT … ON CONFLICT` on such a table ("ON CONFLICT does not support
/// deferrable unique constraints/exclusion constraints as arbiters", SQLSTATE 55000), so the
/// store inserts into it without that clause: inside a savepoint when the model has uniqueness
/// constraints on the table (a refusal by one of those is reported as a conflict, as elsewhere),
/// plainly otherwise. A row that breaks the deferred constraint then fails the save at `COMMIT`
/// (`.storeWriteFailed` with the server's 23505), leaving the store as it was.
///
/// A join table with such a constraint gets its pairs by an `INSERT … SELECT` that skips a pair
/// already there (what `ON CONFLICT DO NOTHING` did).
///
/// The tables are read as the store opens, at the start of each batch insert, and when a
/// save's insert meets the refusal (a constraint added while the store is open): the save then
/// runs once more.
extension PostgreSQLStore {
    /// The names of the schema's tables with a unique or exclusion index that is not checked
    /// immediately. Parameter: the schema.
    static let deferrableTablesSQL = """
        SELECT DISTINCT c.relname::text FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid \
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT i.indimmediate
        """

    /// The SQLSTATE of the refusal (object_not_in_prerequisite_state).
    static let deferrableArbiterRefused = "55000"

    /// The tables of `schema` with a deferrable unique or exclusion constraint, read on `c`.
    static func deferrableTables(_ schema: String, on c: PostgreSQLConnection) throws(PostgreSQLError) -> Set<String> {
        Set(
            try c.execute(deferrableTablesSQL, [.text(schema)]).rows.compactMap { row -> String? in
                if case .text(let name)? = row.first { return name }
                return nil
            })
    }

    /// Whether rows of `entity` are inserted without `ON CONFLICT` (its table has a deferrable
    /// unique or exclusion constraint).
    func insertsWithoutArbiter(_ entity: EntityDescription) -> Bool {
        let table = generator.naming.tableName(entity.rootEntity)
        return deferrableTables.withLock { $0.contains(table) }
    }

    /// Whether pairs of `relationship` are inserted without `ON CONFLICT` (its join table has a
    /// deferrable unique or exclusion constraint, such as its primary key made deferrable).
    func insertsJoinWithoutArbiter(_ relationship: RelationshipDescription) -> Bool {
        guard let table = generator.joinTableName(relationship) else { return false }
        return deferrableTables.withLock { $0.contains(table) }
    }

    /// Whether `error` is the server's refusal of `INSERT … ON CONFLICT` on a table with a
    /// deferrable constraint.
    static func isDeferrableArbiterRefusal(_ error: CoherenceError) -> Bool {
        error.underlyingErrors.contains { e in
            guard let e = e as? PostgreSQLError else { return false }
            return e.sqlState == deferrableArbiterRefused && (e.sql?.contains("ON CONFLICT") ?? false)
        }
    }

    /// After `error`: when it is that refusal, reads the deferrable tables again and returns
    /// whether they changed (so that the write is worth running once more).
    func learnDeferrableTables(after error: CoherenceError) -> Bool {
        guard Self.isDeferrableArbiterRefusal(error) else { return false }
        let schema = configuration.schema
        guard let found = try? withReader(nil, { c in try Self.deferrableTables(schema, on: c) }) else { return false }
        return deferrableTables.withLock { known in
            defer { known = found }
            return known != found
        }
    }
}
