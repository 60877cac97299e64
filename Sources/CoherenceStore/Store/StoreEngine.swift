import Foundation

/// What the coordinator needs from a store. SQLite and in-memory stores implement it; a
/// PostgreSQL store will too.
///
/// Saves are two-phase so that one save can span several stores: ``beginSave(_:)`` writes the
/// change set inside an open transaction (or validates it, for the in-memory store) and
/// reports conflicts; ``commitSave()`` or ``rollbackSave()`` ends it. The coordinator calls
/// these under its save lock, one save at a time.
package protocol StoreEngine: AnyObject, Sendable {
    /// The store's UUID (kept in its metadata).
    var identifier: UUID { get }
    /// The model configuration the store was added for (nil: every entity).
    var configurationName: String? { get }
    /// The store's metadata.
    var metadata: [String: String] { get }
    /// A description for errors: the file path, or "in-memory <UUID>".
    var locationDescription: String { get }

    func fetch(_ fetch: StoreFetch) throws(CoherenceError) -> [StoreRow]
    /// Hands each row of a fetch to `body` as it is read (while its values are still in the
    /// processor's cache), in order, with its object ID in this store. Before the first row,
    /// `expect` learns how many rows the store expects (0: no idea), so that the receiver can
    /// size its tables once instead of growing them row by row. An estimate only: the fetch may
    /// return more rows or fewer.
    func fetch(
        _ fetch: StoreFetch, expecting expect: (Int) -> Void,
        each body: (consuming FetchedRow) -> Void) throws(CoherenceError)
    func fetchKeys(_ fetch: StoreFetch) throws(CoherenceError) -> [(primaryKey: Int64, entityNumber: Int)]
    func count(_ fetch: StoreFetch) throws(CoherenceError) -> Int
    /// Rows of `entity` and its sub-entities by primary key. Missing keys, and keys of rows of
    /// other entities of the hierarchy (a sibling sharing the table), are left out.
    func rows(of entity: EntityDescription, keys: [Int64]) throws(CoherenceError) -> [StoreRow]
    /// Destinations of a relationship for several source keys.
    func related(_ relationship: RelationshipDescription, sources: [Int64]) throws(CoherenceError) -> RelatedKeys
    /// Reserves `count` primary keys for an entity hierarchy; returns the first.
    func allocateKeys(for entity: EntityDescription, count: Int) throws(CoherenceError) -> Int64

    func beginSave(_ changes: StoreChangeSet) throws(CoherenceError) -> StoreSaveResult
    func commitSave() throws(CoherenceError)
    func rollbackSave()
    /// Runs a batch request (rows inserted, updated or deleted without objects) inside an open
    /// transaction and reports the rows it changed; ``commitSave()`` or ``rollbackSave()`` ends
    /// it, as for a save. On an error nothing is written and the transaction is already ended.
    func beginBatch(_ request: StoreBatchRequest) throws(CoherenceError) -> StoreBatchResult

    /// Closes the store's files. Later calls fail with `.storeNotAttached`.
    func close()

    // MARK: History

    /// Whether the store records persistent history (``StoreOptions/persistentHistoryTracking``).
    var tracksHistory: Bool { get }
    /// The token of the last transaction this store object committed (nil before its first, or
    /// without history): read after a save, without touching the file.
    var lastCommittedHistoryToken: PersistentHistoryToken? { get }
    /// The token of the store's latest transaction, as the file has it now (number 0 when it has
    /// none); nil when the store does not track history.
    func currentHistoryToken() throws(CoherenceError) -> PersistentHistoryToken?
    /// The transactions a query selects, oldest first, and how many there are.
    func fetchHistory(_ query: HistoryQuery) throws(CoherenceError) -> (transactions: [PersistentHistoryTransaction], count: Int)
    /// Deletes the transactions a query selects; returns how many. Called under the
    /// coordinator's save lock.
    func deleteHistory(_ query: HistoryQuery) throws(CoherenceError) -> Int
}

extension StoreEngine {
    /// Reads every row, then hands them over one by one (expecting exactly their number).
    package func fetch(
        _ fetch: StoreFetch, expecting expect: (Int) -> Void,
        each body: (consuming FetchedRow) -> Void
    ) throws(CoherenceError) {
        var rows = try self.fetch(fetch)
        expect(rows.count)
        var ids = ObjectID.RowIDs(storeIdentifier: identifier)
        var i = 0
        while i < rows.count {
            let row = rows[i]
            body(FetchedRow(id: ids.next(entity: row.entity, primaryKey: row.primaryKey), version: row.version, values: row.values))
            i += 1
        }
        rows.removeAll()
    }
}
