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

    /// Runs every step whose source version is the store's, until the store is at `model`'s
    /// version or no step applies; then, when ``StoreOptions/migratesAutomatically`` is on, the
    /// inferred migration to `model`. All of it on a copy that replaces the store at the end.
    public func migrateStore(at url: URL, to model: ManagedObjectModel, options: StoreOptions) throws(CoherenceError) {
        var inner = options
        inner.stagedMigrationManager = nil
        inner.remoteChangeNotificationPost = false
        let target = model.versionHash
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        var current = metadata["modelVersionHash"]
        if current == nil && metadata["storeLayout"] == "CoreData" {
            // A store made by Core Data that Coherence has not opened yet: it is at the version
            // of the first stage's source model whose entities fit its tables (opening it with
            // one that does not fit changes nothing).
            for step in stages.flatMap(\.steps) where (try? Self.open(step.source, url: url, options: inner)) != nil {
                current = step.source.versionHash
                break
            }
        }
        var steps: [(label: String, step: MigrationStep)] = []
        for stage in stages {
            for step in stage.steps where current == step.source.versionHash && current != target {
                steps.append((stage.label, step))
                current = step.destination.versionHash
            }
        }
        guard !steps.isEmpty else { return }
        let copy = try MigrationCopy.make(of: url)
        // Each step's inferred migration (rows as units) is a child of one unit of this progress,
        // itself a child of the caller's current one.
        let progress = Progress(totalUnitCount: Int64(steps.count) + 1)
        do {
            for (label, step) in steps {
                progress.becomeCurrent(withPendingUnitCount: 1)
                defer { progress.resignCurrent() }
                Self.stepHook?("stage \(label)")
                CoherenceLogging.log(.info, "migration", "Stage '\(label)': \(url.path)")
                do {
                    if let will = step.willMigrate { try Self.run(will, model: step.source, url: copy.url, options: inner) }
                    if let did = step.didMigrate {
                        try Self.run(did, model: step.destination, url: copy.url, options: inner)
                    } else {
                        try Self.open(step.destination, url: copy.url, options: inner)
                    }
                } catch {
                    var e = CoherenceError(.migrationFailed, "Migration stage '\(label)' failed: \(error)", store: url.path)
                    e.underlyingErrors = [error as? CoherenceError ?? CoherenceError(.migrationFailed, "\(error)")]
                    throw e
                }
            }
            if current != target && options.migratesAutomatically && options.infersMappingModelAutomatically {
                progress.becomeCurrent(withPendingUnitCount: 1)
                defer { progress.resignCurrent() }
                try Self.open(model, url: copy.url, options: inner)
            }
            progress.completedUnitCount = progress.totalUnitCount
            Self.stepHook?("replace")
            try copy.replaceOriginal()
        } catch {
            copy.discard()
            var e = error as? CoherenceError ?? CoherenceError(.migrationFailed, "The migration failed: \(error)")
            e.store = url.path
            throw e
        }
    }

    /// Adds the store with `model` (migrating it by inference), then removes it.
    private static func open(_ model: ManagedObjectModel, url: URL, options: StoreOptions) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        try coordinator.remove(store)
    }

    /// Runs a handler in a context on the store at `model`'s version and saves what it did.
    private static func run(
        _ handler: @Sendable (ManagedObjectContext) throws -> Void, model: ManagedObjectModel, url: URL, options: StoreOptions
    ) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        defer { try? coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "migration")
        try context.performAndWait { () throws in
            try handler(context)
            try context.save()
        }
    }
}
