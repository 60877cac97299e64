import Foundation

/// A history request as one store runs it (the coordinator resolves a
/// ``PersistentHistoryChangeRequest`` into one per store).
package struct HistoryQuery: Sendable {
    package enum Bound: Sendable {
        /// Transactions numbered above this (nil: all).
        case afterNumber(Int64?)
        /// Transactions stamped after this date.
        case afterDate(Date)
        /// Transactions numbered below this (nil: all).
        case beforeNumber(Int64?)
        /// Transactions stamped before this date.
        case beforeDate(Date)
    }

    package var bound: Bound
    package var authors: Set<String>?
    package var excludedAuthors: Set<String> = []
    package var contextNames: Set<String>?
    /// Entity names, sub-entities included (nil: every entity).
    package var entityNames: Set<String>?
    /// 0: no limit.
    package var limit = 0
    package var includesChanges = true
    package var countsOnly = false

    package init(bound: Bound) { self.bound = bound }

    /// Whether a transaction passes the filters (the in-memory store's version of the SQL).
    package func matches(_ t: StoredHistoryTransaction) -> Bool {
        switch bound {
        case .afterNumber(let n): if let n, t.number <= n { return false }
        case .afterDate(let d): if t.timestamp <= d { return false }
        case .beforeNumber(let n): if let n, t.number >= n { return false }
        case .beforeDate(let d): if t.timestamp >= d { return false }
        }
        if let authors {
            guard let a = t.author, authors.contains(a) else { return false }
        }
        if let a = t.author, excludedAuthors.contains(a) { return false }
        if let contextNames {
            guard let c = t.contextName, contextNames.contains(c) else { return false }
        }
        if let entityNames, !t.entities.contains(where: { entityNames.contains($0) }) { return false }
        return true
    }

    /// Throws `.historyTokenExpired` when a fetch after transaction `number` cannot be complete:
    /// transactions after it were deleted (`deletedThrough`, the highest number ever deleted,
    /// is above it), or it is newer than the store's last transaction (`last`).
    package func checkNotExpired(deletedThrough: Int64, last: Int64, store: String) throws(CoherenceError) {
        guard case .afterNumber(let number?) = bound else { return }
        if number < deletedThrough {
            throw CoherenceError(
                .historyTokenExpired,
                "The history after transaction \(number) was partly deleted (through transaction \(deletedThrough)), so it cannot be read completely. Read your objects again (refetch them, or reset the contexts), then fetch the history from the oldest remaining transaction (fetchHistory(after: nil)) or take the coordinator's currentPersistentHistoryToken(fromStores:), and keep that token instead.",
                store: store)
        }
        if number > last {
            throw CoherenceError(
                .historyTokenExpired,
                "The token names transaction \(number), but the store's history ends at transaction \(last) (was the store replaced by an older copy?). Read your objects again (refetch them, or reset the contexts), then fetch the history from the oldest remaining transaction (fetchHistory(after: nil)) or take the coordinator's currentPersistentHistoryToken(fromStores:), and keep that token instead.",
                store: store)
        }
    }

    /// A transaction in its public form, for the store `storeIdentifier`: its columns, and its
    /// encoded changes when the query wants them (`changes`, read in place).
    package func transaction(
        number: Int64, timestamp: Date, author: String?, contextName: String?, processID: String,
        changes: UnsafeRawBufferPointer, storeIdentifier: UUID, entities: [String: EntityDescription], store: String
    ) throws(CoherenceError) -> PersistentHistoryTransaction {
        let token = PersistentHistoryToken(storeIdentifier: storeIdentifier, transactionNumber: number)
        let decoded =
            includesChanges
            ? try HistoryCoding.decode(changes, entities: entities, token: token, only: entityNames, store: store) : nil
        return PersistentHistoryTransaction(
            token: token, timestamp: timestamp, author: author, contextName: contextName, processID: processID, changes: decoded)
    }

    /// A stored transaction in its public form, for the store `storeIdentifier` (see
    /// ``transaction(number:timestamp:author:contextName:processID:changes:storeIdentifier:entities:store:)``).
    package func transaction(
        _ t: StoredHistoryTransaction, storeIdentifier: UUID, entities: [String: EntityDescription], store: String
    ) throws(CoherenceError) -> PersistentHistoryTransaction {
        // (`withUnsafeBytes` rethrows untyped errors: the result carries the typed one out.)
        let decoded = t.changes.withUnsafeBytes { bytes in
            Result { () throws(CoherenceError) -> PersistentHistoryTransaction in
                try transaction(
                    number: t.number, timestamp: t.timestamp, author: t.author, contextName: t.contextName, processID: t.processID,
                    changes: bytes, storeIdentifier: storeIdentifier, entities: entities, store: store)
            }
        }
        return try decoded.get()
    }
}
