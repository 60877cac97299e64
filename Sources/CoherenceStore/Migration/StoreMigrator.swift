import Foundation

/// Migrates a SQLite store before a coordinator adds it: what
/// ``StoreOptions/stagedMigrationManager`` holds (a `StagedMigrationManager`).
public protocol StoreMigrator: AnyObject, Sendable {
    /// Brings the store at `url` to `model`'s version, or as close as its stages go (the
    /// coordinator's inferred migration does the rest when ``StoreOptions/migratesAutomatically``
    /// is on). `options` are those the store is being added with.
    func migrateStore(at url: URL, to model: ManagedObjectModel, options: StoreOptions) throws(CoherenceError)
}
