import Foundation

/// A ``DataStack`` on one SQLite store, opened when the stack is made (RCDataKit's
/// `BasicDataStack`), from a model file or from a ``ModelVersion`` enum.
///
/// ```swift
/// // The model file's current version; the store migrates by inference if it must.
/// let stack = try BasicDataStack(SchoolModel.self, mainAuthor: "app")
///
/// // The enum's stages migrate the store to its current version…
/// let migrated = try BasicDataStack(storeURL: url, versionKey: SchoolVersion.self, mainAuthor: "app")
/// // …or the store opens at an older version, unmigrated (for tests of migrations).
/// let old = try BasicDataStack(storeURL: url, versionKey: SchoolVersion.self, currentVersion: .v1, mainAuthor: "app")
/// ```
///
/// The container is a ``GenericPersistentContainer`` with the ``ContextStrategy/Direct``
/// strategy: the view context and background contexts work on the coordinator, and the view
/// context merges the saves of the container's other contexts. With
/// `persistentHistoryOptions`, the store also records history and posts remote changes, and
/// ``historyTracker`` merges what other containers and processes write (Coherence's
/// remote-change notifications do not report a coordinator's own saves, which the view context
/// merges anyway).
public struct BasicDataStack: DataStack {
    /// The container: a ``GenericPersistentContainer`` with the ``ContextStrategy/Direct`` strategy.
    public let container: any PersistentStack
    /// The view context's author.
    public let mainContextAuthor: TransactionAuthor
    /// The tracker made from the stack's `persistentHistoryOptions` for ``mainContextAuthor``
    /// (nil without options). It starts with `startMonitoring()`.
    public let historyTracker: PersistentHistoryTracker?

    /// A stack on the model file's model (``ModelManager/model``).
    ///
    /// - Parameters:
    ///   - modelFile: the model file.
    ///   - storeURL: the store's file (nil: `<modelName>.sqlite` in
    ///     ``GenericPersistentContainer/defaultStoreLocation()``). Missing directories are
    ///     created.
    ///   - mainAuthor: the view context's author.
    ///   - persistentHistoryOptions: nil for no history; otherwise the store records history and
    ///     posts remote changes, and ``historyTracker`` is made from the options.
    /// - Throws: ``ModelError`` when the model file cannot be loaded, ``CoherenceError`` when the
    ///   store cannot be added (`.migrationNotInferable` for a store of another version that
    ///   cannot be migrated by inference, …).
    public init<ModelFile: ModelFileManager>(
        _ modelFile: ModelFile.Type, storeURL: URL? = nil, mainAuthor: TransactionAuthor,
        persistentHistoryOptions: PersistentHistoryTrackingOptions? = nil
    ) throws {
        try self.init(
            name: ModelFile.modelName, model: try ModelFile.checkedModel(), storeURL: storeURL, options: StoreOptions(),
            mainAuthor: mainAuthor, persistentHistoryOptions: persistentHistoryOptions)
    }

    /// A stack on a version of a ``ModelVersion`` enum's model file.
    ///
    /// - Parameters:
    ///   - storeURL: the store's file (nil: `<modelName>.sqlite` in
    ///     ``GenericPersistentContainer/defaultStoreLocation()``).
    ///   - versionKey: the enum of the model's versions.
    ///   - currentVersion: nil or ``ModelVersion/currentVersion``: the model file's model, and
    ///     the store is migrated by the enum's ``ModelVersion/migrationManager()`` (and by
    ///     inference for what the stages leave). An older version: the store opens with that
    ///     version's model and is **not** migrated (a store at another version is refused with
    ///     ``CoherenceError/Code/storeIncompatible``; a new store is made at that version).
    ///   - mainAuthor: the view context's author.
    ///   - persistentHistoryOptions: nil for no history; otherwise the store records history and
    ///     posts remote changes, and ``historyTracker`` is made from the options (RCDataKit's
    ///     versioned initializer forgets the tracker).
    /// - Throws: ``ModelError`` when a version cannot be loaded, ``CoherenceError`` when the
    ///   store cannot be added or migrated (`.migrationFailed` names the failing stage).
    public init<Version: ModelVersion>(
        storeURL: URL? = nil, versionKey: Version.Type, currentVersion: Version? = nil, mainAuthor: TransactionAuthor,
        persistentHistoryOptions: PersistentHistoryTrackingOptions? = nil
    ) throws {
        guard !Version.allCases.isEmpty else {
            throw CoherenceError(.invalidRequest, "The model version type \(Version.self) has no versions.")
        }
        var options = StoreOptions()
        let model: ManagedObjectModel
        if let currentVersion, currentVersion != Version.currentVersion {
            options.migratesAutomatically = false
            model = try currentVersion.modelVersion
        } else {
            options.stagedMigrationManager = try Version.migrationManager()
            model = try Version.ModelFile.checkedModel()
        }
        try self.init(
            name: Version.ModelFile.modelName, model: model, storeURL: storeURL, options: options, mainAuthor: mainAuthor,
            persistentHistoryOptions: persistentHistoryOptions)
    }

    /// Makes the container, adds the store, and makes the tracker when there are history options.
    private init(
        name: String, model: ManagedObjectModel, storeURL: URL?, options: StoreOptions, mainAuthor: TransactionAuthor,
        persistentHistoryOptions: PersistentHistoryTrackingOptions?
    ) throws {
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: name, managedObjectModel: model)
        var options = options
        if persistentHistoryOptions != nil {
            options.persistentHistoryTracking = true
            options.remoteChangeNotificationPost = true
        }
        try container.attachPersistentStore(
            at: storeURL?.deletingLastPathComponent() ?? container.storeLocation,
            for: StoreConfiguration(fileName: storeURL?.lastPathComponent, options: options))
        self.container = container
        self.mainContextAuthor = mainAuthor
        self.historyTracker = persistentHistoryOptions?.tracker(currentAuthor: mainAuthor, container: container)
        _ = viewContext  // names the view context and gives it its author
    }
}
