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
    /// processor's cache), in order. Before the first row, `expect` learns how many rows the
    /// store expects (0: no idea), so that the receiver can size its tables once instead of
    /// growing them row by row. An estimate only: the fetch may return more rows or fewer.
    func fetch(
        _ fetch: StoreFetch, expecting expect: (Int) -> Void,
        each body: (consuming StoreRow) -> Void) throws(CoherenceError)
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

    /// Closes the store's files. Later calls fail with `.storeNotAttached`.
    func close()

    /// HOOK(history): the store's current persistent-history token, which remote-change
    /// notifications carry (``PersistentStoreRemoteChange/historyToken``). Nil while the store
    /// keeps no persistent history (the default, until history is implemented).
    func currentHistoryToken() throws(CoherenceError) -> (any Sendable)?
}

extension StoreEngine {
    /// HOOK(history): no persistent history yet, so no token.
    package func currentHistoryToken() throws(CoherenceError) -> (any Sendable)? { nil }

    /// Reads every row, then hands them over one by one (expecting exactly their number).
    package func fetch(
        _ fetch: StoreFetch, expecting expect: (Int) -> Void,
        each body: (consuming StoreRow) -> Void
    ) throws(CoherenceError) {
        var rows = try self.fetch(fetch)
        expect(rows.count)
        var i = 0
        while i < rows.count {
            body(rows[i])
            i += 1
        }
        rows.removeAll()
    }
}
