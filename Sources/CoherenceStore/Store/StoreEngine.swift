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
    /// processor's cache), in order: the object's ID in this store (of the row's concrete
    /// entity), the row version and the values by slot (as in ``StoreRow/values``). The
    /// receiver takes the ID and the values over (they are passed apart, each consumed, so that
    /// both can move into an object: the ID holds the row's only reference to the entity).
    /// Before the first row, `expect` learns how many rows the store expects (0: no idea), so
    /// that the receiver can size its tables once instead of growing them row by row. An
    /// estimate only: the fetch may return more rows or fewer.
    func fetch(
        _ fetch: StoreFetch, expecting expect: (Int) -> Void,
        each body: RowReceiver) throws(CoherenceError)
    func fetchKeys(_ fetch: StoreFetch) throws(CoherenceError) -> [(primaryKey: Int64, entityNumber: Int)]
    func count(_ fetch: StoreFetch) throws(CoherenceError) -> Int
    /// Rows of `entity` and its sub-entities by primary key, as `snapshot` shows them (nil: as
    /// the store is now). Missing keys, and keys of rows of other entities of the hierarchy (a
    /// sibling sharing the table), are left out.
    func rows(of entity: EntityDescription, keys: [Int64], in snapshot: (any StoreSnapshot)?) throws(CoherenceError) -> [StoreRow]
    /// Destinations of a relationship for several source keys, as `snapshot` shows them (nil:
    /// as the store is now).
    func related(
        _ relationship: RelationshipDescription, sources: [Int64], in snapshot: (any StoreSnapshot)?
    ) throws(CoherenceError) -> RelatedKeys
    /// Reserves `count` primary keys for an entity hierarchy; returns the first.
    func allocateKeys(for entity: EntityDescription, count: Int) throws(CoherenceError) -> Int64

    func beginSave(_ changes: StoreChangeSet) throws(CoherenceError) -> StoreSaveResult
    /// Checks, in the transaction ``beginSave(_:)`` or ``beginBatch(_:author:contextName:)``
    /// left open, what ``commitSave()`` would check only then (constraints and triggers another
    /// program made `DEFERRABLE INITIALLY DEFERRED`), so that a save spanning several stores is
    /// refused before any of them commits. On an error the transaction is already rolled back.
    /// The coordinator calls it only for the stores of such a save that commit after another
    /// one. The default does nothing (a store whose `beginSave` leaves nothing to check).
    func prepareCommit() throws(CoherenceError)
    func commitSave() throws(CoherenceError)
    func rollbackSave()
    /// Runs a batch request (rows inserted, updated or deleted without objects) inside an open
    /// transaction and reports the rows it changed; ``commitSave()`` or ``rollbackSave()`` ends
    /// it, as for a save. On an error nothing is written and the transaction is already ended.
    /// A store that tracks history records the request as one transaction under `author` and
    /// `contextName`.
    func beginBatch(_ request: StoreBatchRequest, author: String?, contextName: String?) throws(CoherenceError) -> StoreBatchResult

    /// Closes the store's files (and its open snapshots). Later calls fail with `.storeNotAttached`.
    func close()

    // MARK: Query generations

    /// Whether the store can hold a snapshot for a query generation (a SQLite store only in WAL
    /// mode). Reads of a fetch whose ``StoreFetch/generation`` has a snapshot of this store go
    /// through that snapshot.
    var supportsSnapshots: Bool { get }
    /// The store's journal mode, for errors (`wal`, `delete`, `memory`).
    var journalModeDescription: String { get }
    /// A snapshot of the store as it is now, held until it is closed.
    func openSnapshot() throws(CoherenceError) -> any StoreSnapshot

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
    /// Every author's recorded progress (nil: the store keeps none). See ``HistoryProgress``.
    func historyProgress() throws(CoherenceError) -> [String: HistoryProgress]?
    /// Records an author's progress (forward only); false when the store keeps none. Called
    /// under the coordinator's save lock.
    func recordHistoryProgress(_ progress: HistoryProgress, author: String) throws(CoherenceError) -> Bool
    /// Removes an author's progress; false when the store keeps none. Called under the save lock.
    func removeHistoryProgress(author: String) throws(CoherenceError) -> Bool
}

extension StoreEngine {
    /// Nothing to check: the SQLite store checks its deferred foreign keys at the end of
    /// `beginSave` (a read of the connection's state, no statement), and the in-memory store
    /// has nothing deferred.
    package func prepareCommit() throws(CoherenceError) {}

    /// Rows of `entity` and its sub-entities by primary key, as the store is now.
    package func rows(of entity: EntityDescription, keys: [Int64]) throws(CoherenceError) -> [StoreRow] {
        try rows(of: entity, keys: keys, in: nil)
    }

    /// Destinations of a relationship for several source keys, as the store is now.
    package func related(_ relationship: RelationshipDescription, sources: [Int64]) throws(CoherenceError) -> RelatedKeys {
        try related(relationship, sources: sources, in: nil)
    }

    /// Reads every row, then hands them over one by one (expecting exactly their number).
    package func fetch(
        _ fetch: StoreFetch, expecting expect: (Int) -> Void,
        each body: RowReceiver
    ) throws(CoherenceError) {
        var rows = try self.fetch(fetch)
        expect(rows.count)
        var ids = ObjectID.RowIDs(storeIdentifier: identifier)
        var i = 0
        while i < rows.count {
            let row = rows[i]
            body(ids.next(entity: row.entity, primaryKey: row.primaryKey), row.version, row.values)
            i += 1
        }
        rows.removeAll()
    }
}
