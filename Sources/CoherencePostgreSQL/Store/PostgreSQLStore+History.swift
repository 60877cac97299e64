import Foundation

/// Persistent history of a PostgreSQL store: the SQLite store's tables (`Z_HISTORYTRANSACTION`,
/// `Z_HISTORYSTATE`, `Z_HISTORYPROGRESS`; ``HistorySQL`` in the PostgreSQL dialect) in the
/// store's schema, the same encoding (``HistoryCoding``) and the same rules. A save's
/// transaction is written in the save's own SQL transaction, so a failed save records nothing.
/// Numbers are handed out from `Z_HISTORYSTATE`'s last number, whose row lock (held until the
/// save commits) orders the writers of every process: numbers grow with commit order and are
/// never reused.
extension PostgreSQLStore {
    /// Checks the history tables as the store opens (inside its opening transaction, under the
    /// schema's advisory lock): with `tracking`, makes them when missing; without, refuses a
    /// store that records history (it is never written without recording).
    /// - Throws: `.historyTrackingRequired`, or the server's error.
    static func prepareHistory(on c: PostgreSQLConnection, tracking: Bool, store location: String) throws {
        let hasHistory = (try c.execute(HistorySQL.tableExists(.postgreSQL)).firstInteger ?? 0) > 0
        if hasHistory && !tracking {
            throw CoherenceError(
                .historyTrackingRequired,
                "The store records persistent history; open it with StoreOptions.persistentHistoryTracking on (it was left as it was).",
                store: location)
        }
        if tracking && !hasHistory {
            for sql in HistorySQL.createTables(.postgreSQL) { try c.execute(sql) }
        }
    }

    /// The values, as stored now, of the rows of `ids` (the tombstones of objects a save or a
    /// batch request is about to delete), read on `c` inside its transaction.
    func storedValues(of ids: [ObjectID], on c: PostgreSQLConnection) throws -> [ObjectID: [StoredValue]] {
        var keys: [ObjectIdentifier: (entity: EntityDescription, keys: [Int64])] = [:]
        for id in ids { keys[ObjectIdentifier(id.entity), default: (id.entity, [])].keys.append(id.primaryKey) }
        var result: [ObjectID: [StoredValue]] = [:]
        for (entity, list) in keys.values {
            let plan = self.plan(for: entity.rootEntity)
            let rows = try c.query(numbered(generator.selectByKeys(entity, plan: plan)), [.text(generator.keyList(list))]) { r in
                try self.rows(r, plan: plan)
            }
            for row in rows {
                result[ObjectID(entity: row.entity, storeIdentifier: identifier, primaryKey: row.primaryKey)] = row.values
            }
        }
        return result
    }

    /// Appends one transaction to the history inside the write transaction open on `c` (a
    /// save's or a batch request's): it commits or rolls back with it. Does nothing when the
    /// store does not track history or the record has no changes.
    func recordHistory(_ record: HistoryTransactionRecord, on c: PostgreSQLConnection) throws(CoherenceError) {
        guard tracksHistory, !record.changes.isEmpty else { return }
        let stored = record.encoded(number: 0)
        let number: Int64?
        do {
            // (The process ID is in the statement's text: see `HistorySQL.insert`.)
            number = try c.execute(
                numbered(HistorySQL.insert(.postgreSQL)),
                [
                    .real(stored.timestamp.timeIntervalSinceReferenceDate), stored.author.map(StoredValue.text) ?? .null,
                    stored.contextName.map(StoredValue.text) ?? .null, .text(stored.entitiesColumn), .integer(Int64(stored.changeCount)),
                    .blob(Data(stored.changes))
                ]
            ).firstInteger
        } catch {
            throw storeError(.storeWriteFailed, error, "Recording persistent history failed")
        }
        guard let number else {
            throw CoherenceError(.corruptRow, "The store's history state (Z_HISTORYSTATE) has no row.", store: locationDescription)
        }
        historyCommits.withLock { $0.pending = number }
    }

    /// The token of the transaction the open save recorded (nil when it recorded none).
    var pendingHistoryToken: PersistentHistoryToken? {
        historyCommits.withLock { $0.pending }.map { PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: $0) }
    }

    package var lastCommittedHistoryToken: PersistentHistoryToken? {
        historyCommits.withLock { $0.last }.map { PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: $0) }
    }

    private func historyNotTracked() -> CoherenceError {
        CoherenceError(.invalidRequest, "The store does not track persistent history.", store: locationDescription)
    }

    package func currentHistoryToken() throws(CoherenceError) -> PersistentHistoryToken? {
        guard tracksHistory else { return nil }
        let last = try withReader(nil) { c in try c.execute(HistorySQL.selectLastNumber(.postgreSQL)).firstInteger ?? 0 }
        return PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: last)
    }

    package func fetchHistory(_ q: HistoryQuery) throws(CoherenceError) -> (transactions: [PersistentHistoryTransaction], count: Int) {
        guard tracksHistory else { throw historyNotTracked() }
        let (filter, bindings) = HistorySQL.filter(q, .postgreSQL)
        let location = locationDescription
        // The state and the transactions are read in one snapshot.
        let (rows, count) = try withReader(nil) { c throws -> (rows: [[StoredValue]], count: Int) in
            try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { if c.isInTransaction { _ = try? c.execute("ROLLBACK") } }
            try historyFetchHook.withLock { $0 }?(c)
            let state = try c.execute(HistorySQL.state(.postgreSQL)).rows.first ?? []
            if state.count == 2, case .integer(let deletedThrough) = state[0], case .integer(let last) = state[1] {
                try q.checkNotExpired(deletedThrough: deletedThrough, last: last, store: location)
            }
            if q.countsOnly {
                return ([], Int(try c.execute(numbered(HistorySQL.count(q, filter: filter)), bindings).firstInteger ?? 0))
            }
            let rows = try c.execute(numbered(HistorySQL.select(q, filter: filter)), bindings).rows
            return (rows, rows.count)
        }
        if q.countsOnly { return ([], count) }
        let entities = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        func text(_ v: StoredValue) -> String? {
            if case .text(let t) = v { return t }
            return nil
        }
        var transactions: [PersistentHistoryTransaction] = []
        transactions.reserveCapacity(rows.count)
        for r in rows {
            guard r.count >= 5, case .integer(let number) = r[0], let timestamp = r[1].doubleValue, case .text(let processID) = r[4] else {
                throw CoherenceError(.corruptRow, "A history transaction row cannot be read.", store: location)
            }
            var changes: [UInt8] = []
            if q.includesChanges, r.count > 5, case .blob(let data) = r[5] { changes = [UInt8](data) }
            let stored = StoredHistoryTransaction(
                number: number, timestamp: Date(timeIntervalSinceReferenceDate: timestamp), author: text(r[2]),
                contextName: text(r[3]), processID: processID, entities: [], changeCount: 0, changes: changes)
            transactions.append(try q.transaction(stored, storeIdentifier: identifier, entities: entities, store: location))
        }
        return (transactions, transactions.count)
    }

    package func deleteHistory(_ q: HistoryQuery) throws(CoherenceError) -> Int {
        guard tracksHistory else { throw historyNotTracked() }
        let (filter, bindings) = HistorySQL.filter(q, .postgreSQL)
        return try inWriteTransaction("Deleting persistent history failed") { c in
            let deleted = try c.execute(numbered(HistorySQL.delete(filter: filter, returningNumbers: true)), bindings).rows
            let highest = deleted.compactMap { row -> Int64? in if case .integer(let n) = row.first { return n } else { return nil } }.max()
            if let highest { try c.execute(numbered(HistorySQL.noteDeleted(.postgreSQL)), [.integer(highest)]) }
            return deleted.count
        }
    }

    // MARK: Progress

    package func historyProgress() throws(CoherenceError) -> [String: HistoryProgress]? {
        try withReader(nil) { c in
            guard (try c.execute(HistoryProgressSQL.exists(.postgreSQL)).firstInteger ?? 0) > 0 else { return [:] }
            var result: [String: HistoryProgress] = [:]
            for r in try c.execute(HistoryProgressSQL.select).rows {
                guard r.count >= 4, case .text(let author) = r[0], case .integer(let number) = r[1], let timestamp = r[2].doubleValue,
                    let updated = r[3].doubleValue
                else { continue }
                result[author] = HistoryProgress(
                    transactionNumber: number, timestamp: Date(timeIntervalSinceReferenceDate: timestamp),
                    updated: Date(timeIntervalSinceReferenceDate: updated))
            }
            return result
        }
    }

    package func recordHistoryProgress(_ progress: HistoryProgress, author: String) throws(CoherenceError) -> Bool {
        let parameters: [StoredValue] = [
            .text(author), .integer(progress.transactionNumber), .real(progress.timestamp.timeIntervalSinceReferenceDate),
            .real(progress.updated.timeIntervalSinceReferenceDate)
        ]
        let what = "Recording the history progress of '\(author)' failed"
        if deferrableTables.withLock({ $0.contains(Self.progressTable) }) {
            return try writeProgress(Self.progressUpsertWithoutArbiter, parameters, what)
        }
        do {
            return try writeProgress(HistoryProgressSQL.upsert, parameters, what)
        } catch  where learnDeferrableTables(after: error) && deferrableTables.withLock({ $0.contains(Self.progressTable) }) {
            // Another program made the table's key deferrable since the store opened.
            return try writeProgress(Self.progressUpsertWithoutArbiter, parameters, what)
        }
    }

    /// The progress table's name as the catalog has it.
    static let progressTable = "z_historyprogress"

    /// ``HistoryProgressSQL/upsert`` without `ON CONFLICT`, which PostgreSQL refuses on a table
    /// whose key another program made `DEFERRABLE`: the author's row moves forward, or is
    /// inserted when there is none. (Two first records of one author at once: the later fails
    /// at `COMMIT`, and the next record updates the row.)
    static let progressUpsertWithoutArbiter = """
        WITH moved AS (UPDATE Z_HISTORYPROGRESS SET Z_NUMBER = $2, Z_TIMESTAMP = $3, Z_UPDATED = $4 \
        WHERE Z_AUTHOR = $1 AND Z_NUMBER <= $2 RETURNING 1) \
        INSERT INTO Z_HISTORYPROGRESS (Z_AUTHOR, Z_NUMBER, Z_TIMESTAMP, Z_UPDATED) SELECT $1, $2, $3, $4 \
        WHERE NOT EXISTS (SELECT 1 FROM Z_HISTORYPROGRESS WHERE Z_AUTHOR = $1)
        """

    package func removeHistoryProgress(author: String) throws(CoherenceError) -> Bool {
        try writeProgress(HistoryProgressSQL.delete, [.text(author)], "Removing the history progress of '\(author)' failed")
    }

    /// Runs one statement on the progress table in a write transaction of its own. The table is
    /// made when missing (a store without history keeps progress too), under the schema's
    /// advisory lock so that concurrent first writers make it once.
    private func writeProgress(_ sql: String, _ parameters: [StoredValue], _ what: String) throws(CoherenceError) -> Bool {
        let schema = configuration.schema
        try inWriteTransaction(what) { c in
            if !tracksHistory {
                try c.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("coherence:" + schema)])
                try c.execute(HistoryProgressSQL.create(.postgreSQL))
            }
            try c.execute(numbered(sql), parameters)
        }
        return true
    }
}
