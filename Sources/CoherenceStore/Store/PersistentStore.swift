import Foundation

/// The kind of a persistent store: ``sqlite``, ``inMemory``, or a store type another product
/// defines (`StoreType.postgreSQL`, in `CoherencePostgreSQL`).
public struct StoreType: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable { case sqlite, inMemory, engine(String) }
    private let kind: Kind
    /// How a store of an engine type opens (nil for SQLite and in-memory stores).
    package let factory: (any StoreEngineFactory)?

    private init(kind: Kind) {
        self.kind = kind
        self.factory = nil
    }

    /// A store type whose stores `factory` opens; types with the same `name` are equal.
    package init(name: String, factory: any StoreEngineFactory) {
        self.kind = .engine(name)
        self.factory = factory
    }

    /// A SQLite file.
    public static let sqlite = StoreType(kind: .sqlite)
    /// Memory only; gone when the store is removed.
    public static let inMemory = StoreType(kind: .inMemory)
    /// `SQLite`, `InMemory`, or the type's name (`PostgreSQL`).
    public var description: String {
        switch kind {
        case .sqlite: return "SQLite"
        case .inMemory: return "InMemory"
        case .engine(let name): return name
        }
    }

    /// Whether both name the same kind of store.
    public static func == (lhs: StoreType, rhs: StoreType) -> Bool { lhs.kind == rhs.kind }
    /// Hashes the kind, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }
}

/// Opens the stores of a ``StoreType`` defined outside this module: the hook by which a product
/// above (`CoherencePostgreSQL`) adds a store engine without this module depending on it.
package protocol StoreEngineFactory: Sendable {
    /// Opens the store at `url` for the entities of `configuration` (nil: every entity).
    func makeEngine(
        url: URL?, model: ManagedObjectModel, configuration: String?, options: StoreOptions
    ) throws(CoherenceError) -> any StoreEngine
    /// The URL the attached store shows (``PersistentStore/url``): `url` without what must not
    /// be shown (a password); also what identifies the store among the attached ones.
    func publicURL(for url: URL?) -> URL?
    /// The metadata of the store at `url`, read without adding it (see
    /// ``PersistentStoreCoordinator/metadataForPersistentStore(type:at:)``).
    func metadata(at url: URL) throws(CoherenceError) -> [String: String]
    /// A copy of the store at `url` for a staged migration to work on (see ``MigrationCopying``).
    func makeMigrationCopy(of url: URL) throws(CoherenceError) -> any MigrationCopying
}

/// Options for adding a store.
public struct StoreOptions: Hashable, Sendable, CustomStringConvertible {
    /// Migrate a SQLite or PostgreSQL store made with another version of the model when it is added
    /// (default `true`; Core Data's `NSMigratePersistentStoresAutomaticallyOption`). Off, such a
    /// store is refused with ``CoherenceError/Code/storeIncompatible``. See the Migrations guide.
    public var migratesAutomatically: Bool
    /// Infer the migration (a lightweight migration) from the schema the store recorded and the
    /// new model (default `true`; Core Data's `NSInferMappingModelAutomaticallyOption`). Both
    /// this and ``migratesAutomatically`` must be on for an inferred migration.
    public var infersMappingModelAutomatically: Bool
    /// How much a SQLite store waits for the disk when it saves (default ``Synchronous/normal``:
    /// a save survives a crashed process; ``Synchronous/full``: a power loss too).
    public var synchronous: Synchronous
    /// Record persistent history: every save appends a ``PersistentHistoryTransaction`` to the
    /// store, in the same SQL transaction as its data (Core Data's
    /// `NSPersistentHistoryTrackingKey`; default off). Read it with
    /// ``PersistentHistoryChangeRequest``.
    ///
    /// Tracking sticks to a SQLite file: once a store has recorded history, opening it without
    /// this option fails with ``CoherenceError/Code/historyTrackingRequired`` and leaves the file
    /// (history included) as it was, so that no save can go unrecorded.
    public var persistentHistoryTracking: Bool
    /// Whether the coordinator posts `Notification.Name.persistentStoreRemoteChange`
    /// when another coordinator — in this process or another process on the same machine —
    /// commits to this SQLite store, and announces its own commits to them (Core Data's
    /// `NSPersistentStoreRemoteChangeNotificationPostOptionKey`). Default `false`.
    ///
    /// Every coordinator that should be heard opens the store with the option: commits are
    /// announced through a companion file next to the store (`<store>-changes`); a PostgreSQL
    /// store announces them through the server (`NOTIFY`), to coordinators on any machine. An
    /// in-memory store belongs to one coordinator and ignores the option. See
    /// ``PersistentStoreCoordinator/remoteChanges``.
    ///
    /// ```swift
    /// try coordinator.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(remoteChangeNotificationPost: true))
    /// ```
    public var remoteChangeNotificationPost: Bool
    /// Whether a SQLite store uses a write-ahead log (default `true`). Off, the file keeps a
    /// rollback journal: the store works, but cannot hold query generations (for tests of
    /// that error).
    package var writeAheadLog = true
    /// Stages that migrate a SQLite or PostgreSQL store made with an older model version before it is added
    /// (Core Data's `NSPersistentStoreStagedMigrationManagerOptionKey`; a `StagedMigrationManager`).
    /// Default `nil`. Options compare it by identity.
    public var stagedMigrationManager: (any StoreMigrator)?

    /// The defaults: infer and migrate, `synchronous` ``Synchronous/normal``, no history and no
    /// remote-change notifications.
    ///
    /// ```swift
    /// try coordinator.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(persistentHistoryTracking: true))
    /// ```
    public init(
        migratesAutomatically: Bool = true, infersMappingModelAutomatically: Bool = true,
        synchronous: Synchronous = .normal, persistentHistoryTracking: Bool = false,
        remoteChangeNotificationPost: Bool = false, stagedMigrationManager: (any StoreMigrator)? = nil
    ) {
        self.stagedMigrationManager = stagedMigrationManager
        self.migratesAutomatically = migratesAutomatically
        self.infersMappingModelAutomatically = infersMappingModelAutomatically
        self.synchronous = synchronous
        self.persistentHistoryTracking = persistentHistoryTracking
        self.remoteChangeNotificationPost = remoteChangeNotificationPost
    }

    /// Whether both have the same values (the same ``stagedMigrationManager`` object).
    public static func == (lhs: StoreOptions, rhs: StoreOptions) -> Bool {
        lhs.migratesAutomatically == rhs.migratesAutomatically
            && lhs.infersMappingModelAutomatically == rhs.infersMappingModelAutomatically
            && lhs.synchronous == rhs.synchronous && lhs.persistentHistoryTracking == rhs.persistentHistoryTracking
            && lhs.remoteChangeNotificationPost == rhs.remoteChangeNotificationPost
            && lhs.stagedMigrationManager.map(ObjectIdentifier.init) == rhs.stagedMigrationManager.map(ObjectIdentifier.init)
            && lhs.writeAheadLog == rhs.writeAheadLog
    }

    /// Hashes the values, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(migratesAutomatically)
        hasher.combine(infersMappingModelAutomatically)
        hasher.combine(synchronous)
        hasher.combine(persistentHistoryTracking)
        hasher.combine(remoteChangeNotificationPost)
        hasher.combine(stagedMigrationManager.map(ObjectIdentifier.init))
        hasher.combine(writeAheadLog)
    }

    /// The options' values on one line.
    public var description: String {
        "migratesAutomatically: \(migratesAutomatically), infersMappingModelAutomatically: \(infersMappingModelAutomatically), synchronous: \(synchronous), persistentHistoryTracking: \(persistentHistoryTracking), remoteChangeNotificationPost: \(remoteChangeNotificationPost)"
    }
}

/// A store attached to a ``PersistentStoreCoordinator``, as Core Data's `NSPersistentStore`.
public final class PersistentStore: Sendable, Hashable, CustomStringConvertible {
    /// The store's UUID, kept in its metadata (part of every ``ObjectID`` it holds).
    public let identifier: UUID
    /// SQLite or in-memory.
    public let type: StoreType
    /// The file, for SQLite stores; the connection URL without its password, for a store type
    /// with a server (PostgreSQL).
    public let url: URL?
    /// The model configuration whose entities the store holds (nil: every entity).
    public let configurationName: String?
    /// The store's metadata (UUID, model version hash, …).
    public let metadata: [String: String]
    /// The options the store was added with.
    public let options: StoreOptions
    package let engine: any StoreEngine
    /// Entities this store holds.
    package let entities: Set<ObjectIdentifier>
    /// The URL the store was opened with (a server's, password included: never shown), for
    /// opening the same store again (a second coordinator of a container).
    package let openedURL: URL?

    init(type: StoreType, url: URL?, openedURL: URL?, options: StoreOptions, engine: any StoreEngine, entities: [EntityDescription]) {
        self.identifier = engine.identifier
        self.type = type
        self.url = url
        self.openedURL = openedURL
        self.configurationName = engine.configurationName
        self.metadata = engine.metadata
        self.options = options
        self.engine = engine
        self.entities = Set(entities.map { ObjectIdentifier($0) })
    }

    /// Whether the store holds objects of `entity`.
    public func holds(_ entity: EntityDescription) -> Bool { entities.contains(ObjectIdentifier(entity)) }

    /// Whether both are the same attached store (identity).
    public static func == (lhs: PersistentStore, rhs: PersistentStore) -> Bool { lhs === rhs }
    /// Hashes the store's identity, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// The type, file (or `memory`) and configuration of the store.
    public var description: String {
        "<PersistentStore \(type) \(type.factory == nil ? url?.path ?? "memory" : url?.absoluteString ?? "") configuration: \(configurationName ?? ManagedObjectModel.defaultConfigurationName)>"
    }
}
