/// A save's history transaction in the making, for a store that writes the save in SQL: the
/// values the tombstones of deleted objects keep, read before the save writes (their rows are
/// gone after), and the transaction to record once the rows are written.
package struct SaveHistory {
    private var builder = HistoryBuilder()
    private var storedRows: [ObjectID: [StoredValue]] = [:]

    /// Reads, through `storedValues` (inside the save's transaction, before it writes), the
    /// stored values of the deleted objects whose tombstones need some.
    package init(_ changes: StoreChangeSet, storedValues: ([ObjectID]) throws -> [ObjectID: [StoredValue]]) rethrows {
        let ids = builder.objectsNeedingTombstones(changes)
        if !ids.isEmpty { storedRows = try storedValues(ids) }
    }

    /// The history transaction of the save, once its rows are written (`result`: the store's
    /// answer, with the inserted objects' permanent IDs).
    package mutating func record(for changes: StoreChangeSet, result: StoreSaveResult) -> HistoryTransactionRecord {
        let records = builder.changes(for: changes, insertedIDs: result.insertedIDs, storedRows: storedRows)
        return HistoryTransactionRecord(author: changes.transactionAuthor, contextName: changes.contextName, changes: records)
    }
}
