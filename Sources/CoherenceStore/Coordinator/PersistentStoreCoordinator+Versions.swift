import Foundation

extension PersistentStoreCoordinator {
    /// The metadata of the store at `url`, read without adding the store (Core Data's
    /// `metadataForPersistentStore(ofType:at:options:)`): the file is opened read-only and
    /// nothing in it changes. It holds `storeUUID`, `modelVersionHash`, `entityVersionHashes`
    /// (JSON), `versionIdentifier` (when the model had one) and `schema`.
    ///
    /// ```swift
    /// let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
    /// if !model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata) { /* migrate */ }
    /// ```
    ///
    /// A PostgreSQL store's metadata is read from its schema, in a read-only transaction.
    /// - Throws: `.storeNotFound` (no file, or a schema without a store), `.storeOpenFailed` (not
    ///   a SQLite database, a server that cannot be reached), `.storeIncompatible` (not a
    ///   Coherence store), `.invalidRequest` (an in-memory store).
    public static func metadataForPersistentStore(type: StoreType, at url: URL) throws(CoherenceError) -> [String: String] {
        if let factory = type.factory { return try factory.metadata(at: url) }
        guard type == .sqlite else {
            throw CoherenceError(.invalidRequest, "Only a SQLite store has metadata to read without adding it.", store: url.path)
        }
        return try SQLiteStore.metadata(at: url)
    }
}

extension ManagedObjectModel {
    /// Whether a store with `metadata` (see
    /// ``PersistentStoreCoordinator/metadataForPersistentStore(type:at:)``) holds the entities of
    /// configuration `name` (nil: every entity) at this model's version, so that adding it needs
    /// no migration.
    public func isConfiguration(withName name: String?, compatibleWithStoreMetadata metadata: [String: String]) -> Bool {
        guard let hash = versionHash(forConfiguration: name) else { return false }
        return metadata["modelVersionHash"] == hash
    }

    /// The per-entity version hashes recorded in a store's metadata (entity name → hash; empty
    /// when the store recorded none).
    public static func entityVersionHashes(inStoreMetadata metadata: [String: String]) -> [String: String] {
        guard let json = metadata["entityVersionHashes"],
            let hashes = try? JSONDecoder().decode([String: String].self, from: Data(json.utf8))
        else { return [:] }
        return hashes
    }
}
