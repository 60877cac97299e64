import Foundation

/// The write transactions of a PostgreSQL store on its writer connection (under the
/// coordinator's save lock): a save's, a batch request's, and the short ones of history deletes
/// and progress records.
extension PostgreSQLStore {
    /// Runs `BEGIN` on the writer connection and returns the connection. A connection lost since
    /// its last use (the server restarted) is replaced first: nothing was sent yet, so the
    /// transaction starts again on a new one.
    /// - Throws: `.storeWriteFailed` (as `what`), `.connectionLost`, `.storeNotAttached`.
    func beginWriterTransaction(_ what: String) throws(CoherenceError) -> PostgreSQLConnection {
        try beginWriterTransaction(what, reserving: nil).connection
    }

    /// Runs `BEGIN` on the writer connection, and with `keys` reserves that many primary keys of
    /// that root entity in the same round trip (one pipeline: the reservation is the
    /// transaction's last statement, as ``allocateKeys(for:count:)`` would run it next). Returns
    /// the connection and the first reserved key. A connection lost since its last use is
    /// replaced first, as ``beginWriterTransaction(_:)`` says; any other failure leaves no
    /// transaction open.
    ///
    /// In the same pipeline it takes the schema's advisory lock shared (opening a store, and so
    /// migrating it, takes it exclusively, so neither can happen while this transaction runs),
    /// then, in statements of their own that see what committed before the lock was granted,
    /// checks that no other coordinator changed the store since it was opened, as the SQLite
    /// store does: migrated it to another model version (this store's rows would be taken for
    /// other entities' or lost), or, for a store opened without history, turned history on (its
    /// writes would be missing from the history others now read; history is sticky, as when
    /// opening). Either refuses the write. A unique index of the model's uniqueness constraints
    /// that another program dropped or made again since the last check is checked and made again
    /// first (see `PostgreSQLStore+UniqueIndexes.swift`).
    /// - Throws: `.storeWriteFailed` (as `what`), `.corruptRow` (no key counter for the entity),
    ///   `.storeIncompatible` (migrated elsewhere, or duplicates where a unique index is missing), `.historyTrackingRequired` (history turned on
    ///   elsewhere), `.connectionLost`, `.storeNotAttached`.
    ///
    /// The indexes are repaired at most ``maximumUniqueIndexRepairs`` times per call: when another
    /// program changes them again each time before the write starts over, the write fails with
    /// `.storeWriteFailed` instead of repairing for ever.
    func beginWriterTransaction(
        _ what: String, reserving keys: (root: EntityDescription, count: Int)?, repairs: Int = 0
    ) throws(CoherenceError) -> (connection: PostgreSQLConnection, firstKey: Int64?) {
        // The transaction's ID (it writes, so it has one anyway): a `COMMIT` whose connection is
        // lost asks the server afterwards whether it committed (see `commitSave()`).
        var statements: [(sql: String, parameters: [StoredValue])] = [("BEGIN", []), ("SELECT txid_current()", [])]
        // The schema's advisory lock, shared: opening (and so migrating) the store takes it
        // exclusively, so neither a migration nor history being turned on can happen while this
        // transaction runs; the statements after it see what committed before it was granted.
        statements.append(("SELECT pg_advisory_xact_lock_shared(hashtext($1))", [.text("coherence:" + configuration.schema)]))
        let versionCheck = statements.count
        statements.append(("SELECT Z_VALUE FROM Z_METADATA WHERE Z_KEY = 'modelVersionHash'", []))
        let checksHistory = !tracksHistory
        if checksHistory {
            // `to_regclass` looks the table up in the catalog through the search path (the
            // store's schema): far cheaper than `information_schema`.
            statements.append(
                ("SELECT CASE WHEN to_regclass($1) IS NULL THEN 0 ELSE 1 END", [.text(HistorySQL.transactionTable.lowercased())]))
        }
        // The unique indexes' object IDs, compared with those last checked (see
        // PostgreSQLStore+UniqueIndexes.swift).
        let indexCheck = statements.count
        let fingerprintQuery = uniqueIndexFingerprintQuery
        if let fingerprintQuery { statements.append((fingerprintQuery, [])) }
        if let keys {
            statements.append(
                (numbered(generator.allocatePrimaryKeys(keys.root)), [.integer(Int64(keys.count)), .integer(Int64(keys.root.entityNumber))])
            )
        }
        var c = try writerConnection()
        var results: [PostgreSQLResult]
        do {
            results = try c.executePipelined(statements)
        } catch {
            guard error.isConnectionLoss else {
                if c.isInTransaction { _ = try? c.execute("ROLLBACK") }
                throw storeError(.storeWriteFailed, error, what)
            }
            c = try reconnectWriter()
            do {
                results = try c.executePipelined(statements)
            } catch {
                if c.isInTransaction { _ = try? c.execute("ROLLBACK") }
                throw storeError(.storeWriteFailed, error, what)
            }
        }
        writerTransactionID.withLock { $0 = results.count > 1 ? results[1].firstInteger : nil }
        let storedHash: String? =
            if results.count > versionCheck, case .text(let hash)? = results[versionCheck].rows.first?.first { hash } else { nil }
        if storedHash != metadata["modelVersionHash"] {
            _ = try? c.execute("ROLLBACK")
            throw CoherenceError(
                .storeIncompatible,
                "Another coordinator migrated this store to another model version (\(storedHash ?? "none")) since it was opened; "
                    + "add it again with that version's model (nothing was written).",
                store: locationDescription)
        }
        if checksHistory, results.count > versionCheck + 1, (results[versionCheck + 1].firstInteger ?? 0) != 0 {
            _ = try? c.execute("ROLLBACK")
            throw CoherenceError(
                .historyTrackingRequired,
                "Another coordinator turned persistent history on for this store since it was opened without it; "
                    + "open it again with StoreOptions.persistentHistoryTracking on (nothing was written).",
                store: locationDescription)
        }
        if fingerprintQuery != nil, results.count > indexCheck {
            let fingerprint: String? = if case .text(let text)? = results[indexCheck].rows.first?.first { text } else { nil }
            if fingerprint != checkedUniqueIndexes.withLock({ $0 }) {
                // Checked and made again in a transaction of their own; then the write starts over.
                _ = try? c.execute("ROLLBACK")
                guard repairs < Self.maximumUniqueIndexRepairs else {
                    throw CoherenceError(
                        .storeWriteFailed,
                        "\(what): the store's unique indexes changed again after each of \(repairs) repairs "
                            + "(another program keeps dropping or replacing them); nothing was written.",
                        store: locationDescription)
                }
                try repairUniqueIndexes(on: c)
                try uniqueIndexRepairHook.withLock { $0 }?()
                return try beginWriterTransaction(what, reserving: keys, repairs: repairs + 1)
            }
        }
        guard let keys else { return (c, nil) }
        guard results.count == statements.count, let last = results[statements.count - 1].firstInteger else {
            _ = try? c.execute("ROLLBACK")
            throw CoherenceError(
                .corruptRow, "No primary-key counter for entity '\(keys.root.name)'.", entity: keys.root.name,
                store: locationDescription)
        }
        return (c, last - Int64(keys.count) + 1)
    }

    /// Runs `body` in a write transaction of its own, committed when it returns and rolled back
    /// when it throws (a failure reported as `what`).
    func inWriteTransaction<T>(_ what: String, _ body: (PostgreSQLConnection) throws -> T) throws(CoherenceError) -> T {
        let c = try beginWriterTransaction(what)
        do {
            let value = try body(c)
            try c.execute("COMMIT")
            return value
        } catch {
            if c.isInTransaction { _ = try? c.execute("ROLLBACK") }
            throw storeError(.storeWriteFailed, error, what)
        }
    }

    /// Runs a write that a unique index may refuse. With `savepoint` (the table has uniqueness
    /// constraints), it runs inside a savepoint, and a refusal rolls back to it and returns nil
    /// (the transaction goes on: a failed statement would end it). Without, it just runs.
    func executeRefusable(
        _ sql: String, _ parameters: [StoredValue], on c: PostgreSQLConnection, savepoint: Bool
    ) throws(PostgreSQLError) -> PostgreSQLResult? {
        guard savepoint else { return try c.execute(sql, parameters) }
        try c.execute("SAVEPOINT coherence_write")
        let result: PostgreSQLResult
        do {
            result = try c.execute(sql, parameters)
        } catch {
            guard error.isUniqueViolation else { throw error }
            try c.execute("ROLLBACK TO SAVEPOINT coherence_write")
            return nil
        }
        try c.execute("RELEASE SAVEPOINT coherence_write")
        return result
    }

    /// The destinations in rows of ``SQLGenerator/selectRelated(_:)`` (source key, destination
    /// key, destination entity number), by source key.
    static func relatedKeys(_ rows: [[StoredValue]]) -> RelatedKeys {
        var related: RelatedKeys = [:]
        for r in rows {
            guard r.count >= 3, case .integer(let source) = r[0], case .integer(let key) = r[1], case .integer(let n) = r[2] else {
                continue
            }
            related[source, default: []].append((key, Int(n)))
        }
        return related
    }
}
