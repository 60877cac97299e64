import CoherenceBase
import Foundation

/// Migrates a store through a sequence of stages (Core Data's `NSStagedMigrationManager`). Pass it
/// in ``StoreOptions/stagedMigrationManager``; when the store is added, every stage whose source
/// version is the store's runs, in order.
///
/// ```swift
/// var split = CustomMigrationStage(migratingFrom: v2, to: v3, label: "split names")
/// split.didMigrateHandler = { context in /* fill the new attributes */ }
/// let manager = StagedMigrationManager([LightweightMigrationStage([v1, v2]), split])
/// try coordinator.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(stagedMigrationManager: manager))
/// ```
///
/// The migration is all or nothing: the stages (and the inferred migration that finishes what
/// they leave undone) run on a copy of the store, which replaces the store only when all of them
/// succeeded. A stage that fails (its handler throws, or its migration cannot be inferred) throws
/// ``CoherenceError/Code/migrationFailed`` naming the stage, and the store is left at its old
/// version with its old data; so is a process killed during the migration.
public final class StagedMigrationManager: StoreMigrator {
    /// The stages, in order.
    public let stages: [any MigrationStage]
    /// Test hook: called with `"stage <label>"` as each step starts and `"replace"` before the
    /// migrated copy takes the store's place (a test stops the process there).
    nonisolated(unsafe) package static var stepHook: ((String) -> Void)?

    /// A manager running `stages` in order.
    public init(_ stages: [any MigrationStage]) {
        self.stages = stages
    }

    /// Migrates the SQLite store at `url` (see ``migrateStore(type:at:to:options:)``).
    public func migrateStore(at url: URL, to model: ManagedObjectModel, options: StoreOptions) throws(CoherenceError) {
        try migrateStore(type: .sqlite, at: url, to: model, options: options)
    }

    /// Migrates the store of `type` at `url`, which holds every entity of the model (see
    /// ``migrateStore(type:at:configuration:to:options:)``).
    public func migrateStore(type: StoreType, at url: URL, to model: ManagedObjectModel, options: StoreOptions) throws(CoherenceError) {
        try migrateStore(type: type, at: url, configuration: nil, to: model, options: options)
    }

    /// Runs every step whose source version is the store's, until the store is at `model`'s
    /// version or no step applies; then, when ``StoreOptions/migratesAutomatically`` is on, the
    /// inferred migration to `model`. All of it on a copy that replaces the store at the end: a
    /// copy of the SQLite file next to it, or of the PostgreSQL store's schema (see the
    /// Migrations guide). A store of a configuration (`configuration`) is at the version of the
    /// step whose model has that configuration's entities at the store's version, and each step
    /// adds it with that configuration.
    public func migrateStore(
        type: StoreType, at url: URL, configuration: String?, to model: ManagedObjectModel, options: StoreOptions
    ) throws(CoherenceError) {
        let configuration = configuration == ManagedObjectModel.defaultConfigurationName ? nil : configuration
        var inner = options
        inner.stagedMigrationManager = nil
        inner.remoteChangeNotificationPost = false
        let location = type.location(of: url)
        // Cheap when there is nothing to do; the steps are worked out again on the copy (another
        // process may have migrated the store meanwhile).
        guard try !steps(type: type, url: url, configuration: configuration, to: model, options: inner).isEmpty else { return }
        let copy = try type.makeMigrationCopy(of: url)
        // Each step's inferred migration (rows as units) is a child of one unit of this progress,
        // itself a child of the caller's current one.
        do {
            let steps = try self.steps(type: type, url: copy.url, configuration: configuration, to: model, options: inner)
            guard !steps.isEmpty else {
                copy.discard()
                return
            }
            let progress = Progress(totalUnitCount: Int64(steps.count) + 1)
            for (label, step) in steps {
                progress.becomeCurrent(withPendingUnitCount: 1)
                defer { progress.resignCurrent() }
                Self.stepHook?("stage \(label)")
                CoherenceLogging.log(.info, "migration", "Stage '\(label)': \(location)")
                do {
                    let at = (type: type, url: copy.url, configuration: configuration)
                    if let will = step.willMigrate { try Self.run(will, model: step.source, at: at, options: inner) }
                    if let did = step.didMigrate {
                        try Self.run(did, model: step.destination, at: at, options: inner)
                    } else {
                        try Self.open(step.destination, at: at, options: inner)
                    }
                } catch {
                    var e = CoherenceError(.migrationFailed, "Migration stage '\(label)' failed: \(error)", store: location)
                    e.underlyingErrors = [error as? CoherenceError ?? CoherenceError(.migrationFailed, "\(error)")]
                    throw e
                }
            }
            if steps.last?.step.destination.versionHash(forConfiguration: configuration)
                != model.versionHash(forConfiguration: configuration)
                && options.migratesAutomatically && options.infersMappingModelAutomatically
            {
                progress.becomeCurrent(withPendingUnitCount: 1)
                defer { progress.resignCurrent() }
                try Self.open(model, at: (type, copy.url, configuration), options: inner)
            }
            progress.completedUnitCount = progress.totalUnitCount
            Self.stepHook?("replace")
            try copy.replaceOriginal()
        } catch {
            copy.discard()
            var e = error as? CoherenceError ?? CoherenceError(.migrationFailed, "The migration failed: \(error)")
            e.store = location
            throw e
        }
    }

    /// The steps that apply to the store at `url`, in order, with their stages' labels: from the
    /// store's version, each step whose source is the version reached, until `model`'s (the
    /// versions of the entities of `configuration`; a step whose models lack it never applies).
    private func steps(
        type: StoreType, url: URL, configuration: String?, to model: ManagedObjectModel, options: StoreOptions
    ) throws(CoherenceError) -> [(label: String, step: MigrationStep)] {
        let target = model.versionHash(forConfiguration: configuration) ?? model.versionHash
        let metadata: [String: String]
        do {
            metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: type, at: url)
        } catch {
            // (`catch where` on a typed-throws `do` crashes some compilers; hence the guard.)
            // No store yet, or a file without Coherence metadata: adding it makes a new store at
            // the model's version (an empty file, such as a first open killed before its
            // commit leaves) or refuses it (a database that is not a store).
            guard error.code == .storeNotFound || error.code == .storeIncompatible else { throw error }
            return []
        }
        var current = metadata["modelVersionHash"]
        if current == nil && metadata["storeLayout"] == "CoreData" {
            // A store made by Core Data that Coherence has not opened yet: it is at the version
            // of the first stage's source model whose entities fit its tables (opening it with
            // one that does not fit changes nothing).
            for step in stages.flatMap(\.steps)
            where (try? Self.open(step.source, at: (type, url, configuration), options: options)) != nil {
                current = step.source.versionHash(forConfiguration: configuration)
                break
            }
        }
        var steps: [(label: String, step: MigrationStep)] = []
        for stage in stages {
            for step in stage.steps
            where current != nil && current == step.source.versionHash(forConfiguration: configuration) && current != target {
                steps.append((stage.label, step))
                current = step.destination.versionHash(forConfiguration: configuration)
            }
        }
        return steps
    }

    /// Where a step adds the store: its type, location and configuration.
    private typealias Location = (type: StoreType, url: URL, configuration: String?)

    /// Adds the store with `model` (migrating it by inference), then removes it.
    private static func open(_ model: ManagedObjectModel, at location: Location, options: StoreOptions) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(
            type: location.type, configuration: location.configuration, at: location.url, options: options)
        try coordinator.remove(store)
    }

    /// Runs a handler in a context on the store at `model`'s version and saves what it did.
    private static func run(
        _ handler: @Sendable (ManagedObjectContext) throws -> Void, model: ManagedObjectModel, at location: Location, options: StoreOptions
    ) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(
            type: location.type, configuration: location.configuration, at: location.url, options: options)
        defer { try? coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "migration")
        try context.performAndWait { () throws in
            try handler(context)
            try context.save()
        }
    }
}
