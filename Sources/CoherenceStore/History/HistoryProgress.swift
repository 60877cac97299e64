import Foundation

/// How far one author got in a store's persistent history: the number of the last transaction
/// it processed, that transaction's timestamp, and when the record was written. Kept in the
/// store (the `Z_HISTORYPROGRESS` table of a SQLite store's file or a PostgreSQL store's schema)
/// so that every process that opens the store reads every author's progress.
package struct HistoryProgress: Sendable, Hashable {
    /// The number of the last transaction processed (its ``PersistentHistoryToken``'s).
    package var transactionNumber: Int64
    /// That transaction's timestamp.
    package var timestamp: Date
    /// When the record was last written.
    package var updated: Date

    package init(transactionNumber: Int64, timestamp: Date, updated: Date) {
        self.transactionNumber = transactionNumber
        self.timestamp = timestamp
        self.updated = updated
    }
}

/// The SQL of a store's history progress table (a SQLite store's, or with the PostgreSQL dialect
/// a PostgreSQL store's).
package enum HistoryProgressSQL {
    static let create = create(.sqlite)
    /// Makes the table when missing.
    package static func create(_ dialect: SQLDialect) -> String {
        let number = dialect == .sqlite ? "INTEGER" : "BIGINT", time = dialect == .sqlite ? "REAL" : "DOUBLE PRECISION"
        return """
            CREATE TABLE IF NOT EXISTS Z_HISTORYPROGRESS (Z_AUTHOR TEXT PRIMARY KEY NOT NULL, Z_NUMBER \(number) NOT NULL, \
            Z_TIMESTAMP \(time) NOT NULL, Z_UPDATED \(time) NOT NULL)
            """
    }
    static let exists = exists(.sqlite)
    /// The number of progress tables in the store (0 or 1).
    package static func exists(_ dialect: SQLDialect) -> String { dialect.tableExists("Z_HISTORYPROGRESS") }
    package static let select = "SELECT Z_AUTHOR, Z_NUMBER, Z_TIMESTAMP, Z_UPDATED FROM Z_HISTORYPROGRESS"
    /// Progress only moves forward: a record older than the stored one is ignored.
    package static let upsert = """
        INSERT INTO Z_HISTORYPROGRESS (Z_AUTHOR, Z_NUMBER, Z_TIMESTAMP, Z_UPDATED) VALUES (?, ?, ?, ?) \
        ON CONFLICT (Z_AUTHOR) DO UPDATE SET Z_NUMBER = excluded.Z_NUMBER, Z_TIMESTAMP = excluded.Z_TIMESTAMP, \
        Z_UPDATED = excluded.Z_UPDATED WHERE excluded.Z_NUMBER >= Z_HISTORYPROGRESS.Z_NUMBER
        """
    package static let delete = "DELETE FROM Z_HISTORYPROGRESS WHERE Z_AUTHOR = ?"
}

extension PersistentStoreCoordinator {
    /// Every author's progress recorded in `store` (empty when none is; nil when the store
    /// keeps no progress: an in-memory store).
    /// - Throws: `.storeNotAttached`, `.storeReadFailed`.
    package func historyProgress(in store: PersistentStore) throws(CoherenceError) -> [String: HistoryProgress]? {
        try store.engine.historyProgress()
    }

    /// Records `author`'s progress in `store`, in a write transaction of its own (under the save
    /// lock; not announced as a commit). Progress only moves forward: a record behind the
    /// stored one leaves it as it is. Returns false when the store keeps no progress.
    /// - Throws: `.storeNotAttached`, `.storeWriteFailed`.
    @discardableResult
    package func recordHistoryProgress(_ progress: HistoryProgress, author: String, in store: PersistentStore) throws(CoherenceError)
        -> Bool
    {
        try saveLock.withLock { () throws(CoherenceError) -> Bool in try store.engine.recordHistoryProgress(progress, author: author) }
    }

    /// Removes `author`'s progress from `store`. Returns false when the store keeps no progress.
    @discardableResult
    package func removeHistoryProgress(author: String, in store: PersistentStore) throws(CoherenceError) -> Bool {
        try saveLock.withLock { () throws(CoherenceError) -> Bool in try store.engine.removeHistoryProgress(author: author) }
    }
}

extension StoreEngine {
    /// Stores without a file keep no progress.
    package func historyProgress() throws(CoherenceError) -> [String: HistoryProgress]? { nil }
    /// Stores without a file keep no progress.
    package func recordHistoryProgress(_ progress: HistoryProgress, author: String) throws(CoherenceError) -> Bool { false }
    /// Stores without a file keep no progress.
    package func removeHistoryProgress(author: String) throws(CoherenceError) -> Bool { false }
}

extension SQLiteStore {
    package func historyProgress() throws(CoherenceError) -> [String: HistoryProgress]? {
        try withReader { c in
            guard (try c.prepare(HistoryProgressSQL.exists).rows { $0.int64(0) }.first ?? 0) > 0 else { return [:] }
            let st = try c.prepare(HistoryProgressSQL.select)
            var result: [String: HistoryProgress] = [:]
            while try st.step() {
                result[st.string(0)] = HistoryProgress(
                    transactionNumber: st.int64(1), timestamp: Date(timeIntervalSinceReferenceDate: st.double(2)),
                    updated: Date(timeIntervalSinceReferenceDate: st.double(3)))
            }
            return result
        }
    }

    package func recordHistoryProgress(_ progress: HistoryProgress, author: String) throws(CoherenceError) -> Bool {
        try writeProgress(HistoryProgressSQL.upsert, "Recording the history progress of '\(author)' failed") { st in
            st.bind(author, at: 1)
            st.bind(progress.transactionNumber, at: 2)
            st.bind(progress.timestamp.timeIntervalSinceReferenceDate, at: 3)
            st.bind(progress.updated.timeIntervalSinceReferenceDate, at: 4)
        }
    }

    package func removeHistoryProgress(author: String) throws(CoherenceError) -> Bool {
        try writeProgress(HistoryProgressSQL.delete, "Removing the history progress of '\(author)' failed") { $0.bind(author, at: 1) }
    }

    /// Runs one statement on the progress table (made if missing) in a write transaction of its
    /// own, on the writer connection.
    private func writeProgress(_ sql: String, _ what: String, bind: (SQLiteStatement) -> Void) throws(CoherenceError) -> Bool {
        let c = try writerConnectionForSave()
        do {
            try c.writeTransaction {
                try c.execute(HistoryProgressSQL.create)
                let st = try c.prepare(sql)
                bind(st)
                try st.execute()
            }
        } catch {
            throw storeError(.storeWriteFailed, error, what)
        }
        return true
    }
}
