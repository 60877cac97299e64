import Foundation

/// Migrates a store before a coordinator adds it: what ``StoreOptions/stagedMigrationManager``
/// holds (a `StagedMigrationManager`).
public protocol StoreMigrator: AnyObject, Sendable {
    /// Brings the SQLite store at `url` to `model`'s version, or as close as its stages go (the
    /// coordinator's inferred migration does the rest when ``StoreOptions/migratesAutomatically``
    /// is on). `options` are those the store is being added with.
    func migrateStore(at url: URL, to model: ManagedObjectModel, options: StoreOptions) throws(CoherenceError)

    /// Brings the store of `type` at `url` (a file, or a server store's connection URL such as
    /// a PostgreSQL store's) to `model`'s version, or as close as its stages go.
    func migrateStore(type: StoreType, at url: URL, to model: ManagedObjectModel, options: StoreOptions) throws(CoherenceError)

    /// Brings the store of `type` at `url` that holds the entities of the model's configuration
    /// `configuration` (nil: every entity) to `model`'s version of that configuration, or as
    /// close as its stages go. The coordinator calls this one.
    func migrateStore(
        type: StoreType, at url: URL, configuration: String?, to model: ManagedObjectModel, options: StoreOptions
    ) throws(CoherenceError)
}

extension StoreMigrator {
    /// Migrates a SQLite store with ``migrateStore(at:to:options:)``; other store types are
    /// refused with ``CoherenceError/Code/invalidRequest``.
    public func migrateStore(type: StoreType, at url: URL, to model: ManagedObjectModel, options: StoreOptions) throws(CoherenceError) {
        guard type == .sqlite else {
            throw CoherenceError(
                .invalidRequest, "This migrator migrates SQLite stores only, not \(type) stores.", store: type.location(of: url))
        }
        try migrateStore(at: url, to: model, options: options)
    }

    /// Migrates the store with ``migrateStore(type:at:to:options:)``, for a migrator that knows
    /// no configurations.
    public func migrateStore(
        type: StoreType, at url: URL, configuration: String?, to model: ManagedObjectModel, options: StoreOptions
    ) throws(CoherenceError) {
        try migrateStore(type: type, at: url, to: model, options: options)
    }
}
