import Foundation

/// The unique indexes of the model's uniqueness constraints while the store is open. The store
/// finds uniqueness conflicts through them, so one that another program dropped (or replaced by
/// an index of the same name that does not keep the constraint) let saves store duplicates
/// silently. Each write transaction reads, in the pipeline of its `BEGIN`, the indexes' object
/// IDs (a dropped or made-again index has another one); when they differ from those last
/// checked, the transaction is rolled back, the indexes are checked and made again in one of
/// their own (see `StoreLayoutRepair`), and the write starts over.
extension PostgreSQLStore {
    /// The query reading the unique indexes' object IDs, one text (`-` for an index that is not
    /// there); nil when the model has no uniqueness constraints.
    var uniqueIndexFingerprintQuery: String? { Self.uniqueIndexFingerprintQuery(of: entities) }

    /// ``uniqueIndexFingerprintQuery`` for a store of `entities` (opening records the IDs with it).
    static func uniqueIndexFingerprintQuery(of entities: [EntityDescription]) -> String? {
        let names = StoreLayoutRepair.uniqueIndexNames(of: entities, dialect: .postgreSQL)
        guard !names.isEmpty else { return nil }
        // Each name quoted as an identifier (`to_regclass` parses it), then as a literal.
        let literals = names.map { name in
            let identifier = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            return "'" + identifier.replacingOccurrences(of: "'", with: "''") + "'"
        }
        return """
            SELECT coalesce(string_agg(coalesce(to_regclass(n)::OID::TEXT, '-'), ',' ORDER BY o), '') \
            FROM unnest(ARRAY[\(literals.joined(separator: ", "))]::TEXT[]) WITH ORDINALITY AS u(n, o)
            """
    }

    /// Checks the unique indexes and makes again those that are missing or do not keep their
    /// constraint, in a transaction of its own on `c` (none open) that holds the schema's
    /// advisory lock exclusively, as opening does; then records their object IDs.
    /// - Throws: `.storeIncompatible` naming the duplicates the rows already hold (nothing
    ///   changed), `.storeWriteFailed`.
    func repairUniqueIndexes(on c: PostgreSQLConnection) throws(CoherenceError) {
        guard let query = uniqueIndexFingerprintQuery else { return }
        do {
            try c.execute("BEGIN")
            try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("coherence:" + configuration.schema)])
            try StoreLayoutRepair.addMissingUniqueIndexes(
                on: PostgreSQLMigrationDatabase(connection: c), entities: entities, generator: generator, store: locationDescription)
            let fingerprint: String? = if case .text(let text)? = try c.execute(query).rows.first?.first { text } else { nil }
            try c.execute("COMMIT")
            checkedUniqueIndexes.withLock { $0 = fingerprint }
        } catch let error as CoherenceError {
            if c.isInTransaction { _ = try? c.execute("ROLLBACK") }
            throw error
        } catch {
            if c.isInTransaction { _ = try? c.execute("ROLLBACK") }
            throw storeError(.storeWriteFailed, error, "Checking the store's unique indexes failed")
        }
    }
}
