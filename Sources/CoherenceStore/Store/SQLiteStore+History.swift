import Foundation

extension SQLiteStore {
    /// Whether the store's file has history tables.
    static func hasHistoryTables(_ c: SQLiteConnection) throws -> Bool {
        (try c.prepare(HistorySQL.tableExists).rows { $0.int64(0) }.first ?? 0) > 0
    }

    /// Refuses the write transaction just begun on `c` (the writer connection) when another
    /// coordinator (another process, say) changed the store since it was opened:
    /// - migrated it to another model version: rows written with this store's entity numbers and
    ///   columns would be taken for other entities, or lost by the next migration;
    /// - turned persistent history on, for a store opened without it: its writes would be
    ///   missing from the history others now read. History is sticky, as when opening;
    /// - put another file at its path (moved, deleted or replaced it): the write would go to a
    ///   file no longer at the path, lost, or (through the old write-ahead log still at the
    ///   path) laid over the new file.
    ///
    /// The transaction holds the write lock, so neither can happen before it ends. One `PRAGMA`
    /// per write; the metadata and tables are looked at only when the schema changed since the
    /// last look (a migration always changes it).
    /// - Throws: `.storeIncompatible` (migrated, or the file moved) or `.historyTrackingRequired` (the caller rolls
    ///   back: nothing is written), or `.storeWriteFailed` when the schema cannot be read.
    func refuseWritesToAChangedStore(_ c: SQLiteConnection) throws(CoherenceError) {
        if c.fileHasMoved {
            throw CoherenceError(
                .storeIncompatible,
                "The store's file was moved, deleted or replaced (by another program) since it was opened, "
                    + "so this write would not reach the file at its path; add the store again (nothing was written).",
                store: path)
        }
        let hasHistory: Bool
        let hash: String?
        do {
            let st = try c.cachedStatement("PRAGMA schema_version")
            // (Reset at once: a statement still running keeps `DROP INDEX` below from running.)
            let version = try {
                defer { st.reset() }
                return try st.step() ? st.int64(0) : -1
            }()
            guard version != checkedSchemaVersion.withLock({ $0 }) else { return }
            hasHistory = try Self.hasHistoryTables(c)
            // (A store made by Core Data records its version in a property list, not compared here.)
            hash =
                generator.naming.isCoreData
                ? metadata["modelVersionHash"]
                : try c.prepare("SELECT Z_VALUE FROM Z_METADATA WHERE Z_KEY = 'modelVersionHash'").rows { $0.string(0) }.first
            if hash == metadata["modelVersionHash"] && (tracksHistory || !hasHistory) {
                // A unique index another program dropped since the open is made again, in this
                // save's transaction (see StoreLayoutRepair); the save fails when the rows hold
                // duplicates for it.
                // (An index made here is lost when the save rolls back: the version is then
                // recorded only by a later save that finds every index there.)
                let repaired = try StoreLayoutRepair.addMissingUniqueIndexes(
                    on: SQLiteMigrationDatabase(c), entities: entities, generator: generator, store: path)
                if !repaired { checkedSchemaVersion.withLock { $0 = version } }
            }
        } catch let error as CoherenceError {
            throw error
        } catch {
            throw storeError(.storeWriteFailed, error, "Reading the store's schema failed")
        }
        if hash != metadata["modelVersionHash"] {
            throw CoherenceError(
                .storeIncompatible,
                "Another coordinator migrated this store to another model version (\(hash ?? "none")) since it was opened; "
                    + "add it again with that version's model (nothing was written).",
                store: path)
        }
        if hasHistory && !tracksHistory {
            throw CoherenceError(
                .historyTrackingRequired,
                "Another coordinator turned persistent history on for this store since it was opened without it; "
                    + "open it again with StoreOptions.persistentHistoryTracking on (nothing was written).",
                store: path)
        }
    }

    /// Creates the history tables (inside the caller's write transaction).
    static func createHistoryTables(_ c: SQLiteConnection) throws {
        for sql in HistorySQL.createTables { try c.execute(sql) }
    }

    /// The values, as stored now, of the rows of `ids` (for the tombstones of objects a save is
    /// about to delete), read on the writer connection inside the save's transaction.
    func storedValues(of ids: [ObjectID], on c: SQLiteConnection) throws -> [ObjectID: [StoredValue]] {
        var byEntity: [ObjectIdentifier: (EntityDescription, [Int64])] = [:]
        for id in ids { byEntity[ObjectIdentifier(id.entity), default: (id.entity, [])].1.append(id.primaryKey) }
        var result: [ObjectID: [StoredValue]] = [:]
        for (_, (entity, keys)) in byEntity {
            for row in try readRows(of: entity, keys: keys, on: c) {
                result[ObjectID(entity: row.entity, storeIdentifier: identifier, primaryKey: row.primaryKey)] = row.values
            }
        }
        return result
    }

    /// Appends one transaction to the store's history, inside the write transaction the caller
    /// opened on the writer connection (a save's ``beginSave(_:)``, or a batch request's): it
    /// commits or rolls back with that transaction, through ``commitSave()`` or
    /// ``rollbackSave()``. Does nothing when the store does not track history or the record has
    /// no changes.
    package func recordHistory(_ record: HistoryTransactionRecord) throws(CoherenceError) {
        guard tracksHistory, !record.changes.isEmpty else { return }
        let c = try writerConnectionForSave()
        let stored = record.encoded(number: 0)
        do {
            let st = try c.cachedStatement(HistorySQL.insert)
            st.bind(stored.timestamp.timeIntervalSinceReferenceDate, at: 1)
            if let a = stored.author { st.bind(a, at: 2) } else { st.bindNull(2) }
            if let n = stored.contextName { st.bind(n, at: 3) } else { st.bindNull(3) }
            // (The process ID is in the statement's text: see `HistorySQL.insert`.)
            st.bind(stored.entitiesColumn, at: 4)
            st.bind(Int64(stored.changeCount), at: 5)
            stored.changes.withUnsafeBytes { st.bind(bytes: $0, at: 6) }
            try st.execute()
        } catch {
            throw storeError(.storeWriteFailed, error, "Recording persistent history failed")
        }
        let number = c.lastInsertRowID
        historyCommits.withLock { $0.pending = number }
    }

    /// The save's history transaction is committed: its number becomes the last committed one.
    func historyCommitted() {
        historyCommits.withLock { $0.committed() }
    }

    /// The save's history transaction is rolled back.
    func historyRolledBack() {
        historyCommits.withLock { $0.rolledBack() }
    }

    package var lastCommittedHistoryToken: PersistentHistoryToken? {
        historyCommits.withLock { $0.last }.map { PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: $0) }
    }

    private func historyNotTracked() -> CoherenceError {
        CoherenceError(.invalidRequest, "The store does not track persistent history.", store: path)
    }

    package func currentHistoryToken() throws(CoherenceError) -> PersistentHistoryToken? {
        guard tracksHistory else { return nil }
        let last = try withReader { c in try c.prepare(HistorySQL.selectLastNumber(.sqlite)).rows { $0.int64(0) }.first ?? 0 }
        return PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: last)
    }

    package func fetchHistory(_ q: HistoryQuery) throws(CoherenceError) -> (transactions: [PersistentHistoryTransaction], count: Int) {
        guard tracksHistory else { throw historyNotTracked() }
        let (filter, bindings) = HistorySQL.filter(q)
        let entities = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let path = self.path
        let identifier = self.identifier
        return try withReader { c in
            try c.readTransaction { () throws -> (transactions: [PersistentHistoryTransaction], count: Int) in
                let state = try c.cachedStatement(HistorySQL.state)
                defer { state.reset() }
                guard try state.step() else { return ([], 0) }
                try q.checkNotExpired(deletedThrough: state.int64(0), last: state.int64(1), store: path)
                state.reset()
                if q.countsOnly {
                    let st = try c.prepare(HistorySQL.count(q, filter: filter))
                    st.bind(bindings)
                    return ([], try st.step() ? Int(st.int64(0)) : 0)
                }
                let st = try c.prepare(HistorySQL.select(q, filter: filter))
                st.bind(bindings)
                var transactions: [PersistentHistoryTransaction] = []
                while try st.step() {
                    let number = st.int64(0)
                    let timestamp = Date(timeIntervalSinceReferenceDate: st.double(1))
                    let author = st.isNull(2) ? nil : st.string(2)
                    let contextName = st.isNull(3) ? nil : st.string(3)
                    let processID = st.string(4)
                    func make(_ bytes: UnsafeRawBufferPointer) throws(CoherenceError) -> PersistentHistoryTransaction {
                        try q.transaction(
                            number: number, timestamp: timestamp, author: author, contextName: contextName, processID: processID,
                            changes: bytes, storeIdentifier: identifier, entities: entities, store: path)
                    }
                    let t = q.includesChanges ? try st.withBlob(5, make) : try make(UnsafeRawBufferPointer(start: nil, count: 0))
                    transactions.append(t)
                }
                return (transactions, transactions.count)
            }
        }
    }

    package func deleteHistory(_ q: HistoryQuery) throws(CoherenceError) -> Int {
        guard tracksHistory else { throw historyNotTracked() }
        let c = try writerConnectionForSave()
        let (filter, bindings) = HistorySQL.filter(q)
        do {
            return try c.writeTransaction { () throws -> Int in
                let range = try c.prepare(HistorySQL.deletedRange(filter: filter))
                range.bind(bindings)
                guard try range.step() else { return 0 }
                let count = Int(range.int64(0)), highest = range.int64(1)
                range.reset()
                guard count > 0 else { return 0 }
                let delete = try c.prepare(HistorySQL.delete(filter: filter))
                delete.bind(bindings)
                try delete.execute()
                let note = try c.prepare(HistorySQL.noteDeleted)
                note.bind(highest, at: 1)
                try note.execute()
                return count
            }
        } catch {
            throw storeError(.storeWriteFailed, error, "Deleting persistent history failed")
        }
    }
}
