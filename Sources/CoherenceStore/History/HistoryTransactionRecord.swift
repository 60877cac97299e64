import Foundation

/// What one save (or batch request) records in one store's history: who wrote it and the
/// changes. A store that tracks history appends it with the data, in the same SQL transaction
/// (``SQLiteStore/recordHistory(_:)``; the in-memory store records it with its save).
package struct HistoryTransactionRecord: Sendable {
    package var author: String?
    package var contextName: String?
    package var changes: [HistoryChangeRecord]

    package init(author: String?, contextName: String?, changes: [HistoryChangeRecord]) {
        self.author = author
        self.contextName = contextName
        self.changes = changes
    }

    /// The identifier recorded as every transaction's process (this process's ID).
    package static let processID = String(ProcessInfo.processInfo.processIdentifier)

    /// The transaction as stored, numbered `number` and stamped now.
    package func encoded(number: Int64) -> StoredHistoryTransaction {
        let (entities, bytes) = HistoryCoding.encode(changes)
        return StoredHistoryTransaction(
            number: number, timestamp: Date(), author: author, contextName: contextName, processID: Self.processID,
            entities: entities, changeCount: changes.count, changes: bytes)
    }
}

extension HistoryTransactionRecord {
    /// The history transaction of a batch request: one change per row it inserted, updated or
    /// deleted (updates with their recorded values, deletes with their tombstones), under the author and context name of the context
    /// that executed it (nil for both through the coordinator).
    package init(batch changes: [BatchChange], author: String?, contextName: String?) {
        self.init(
            author: author, contextName: contextName,
            changes: changes.map { c in
                let type: PersistentHistoryChangeType
                switch c.kind {
                case .insert: type = .insert
                case .update: type = .update
                case .delete: type = .delete
                }
                return HistoryChangeRecord(
                    objectID: c.objectID, type: type, updatedPropertyNames: c.updatedProperties, values: c.values, tombstone: c.tombstone)
            })
    }
}
