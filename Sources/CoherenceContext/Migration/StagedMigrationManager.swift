import CoherenceBase
import Foundation

/// Migrates a store through a sequence of stages (Core Data's `NSStagedMigrationManager`). Pass it
/// in ``StoreOptions/stagedMigrationManager``; when the store is added, every stage whose source
/// version is the store's runs, in order, each step in its own transaction.
///
/// ```swift
/// var split = CustomMigrationStage(migratingFrom: v2, to: v3, label: "split names")
/// split.didMigrateHandler = { context in /* fill the new attributes */ }
/// let manager = StagedMigrationManager([LightweightMigrationStage([v1, v2]), split])
/// try coordinator.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(stagedMigrationManager: manager))
/// ```
///
/// A stage that fails (its handler throws, or its migration cannot be inferred) throws
/// ``CoherenceError/Code/migrationFailed`` naming the stage; the store stays at the version it
/// reached before that stage (a handler's changes are not saved).
public final class StagedMigrationManager: StoreMigrator {
    /// The stages, in order.
    public let stages: [any MigrationStage]

    /// A manager running `stages` in order.
    public init(_ stages: [any MigrationStage]) {
        self.stages = stages
    }

    /// Runs every step whose source version is the store's, until the store is at `model`'s
    /// version or no step applies.
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
        for stage in stages {
            for step in stage.steps where current == step.source.versionHash && current != target {
                CoherenceLogging.log(.info, "migration", "Stage '\(stage.label)': \(url.path)")
                do {
                    if let will = step.willMigrate { try Self.run(will, model: step.source, url: url, options: inner) }
                    if let did = step.didMigrate {
                        try Self.run(did, model: step.destination, url: url, options: inner)
                    } else {
                        try Self.open(step.destination, url: url, options: inner)
                    }
                } catch {
                    var e = CoherenceError(.migrationFailed, "Migration stage '\(stage.label)' failed: \(error)", store: url.path)
                    e.underlyingErrors = [error as? CoherenceError ?? CoherenceError(.migrationFailed, "\(error)")]
                    throw e
                }
                current = step.destination.versionHash
            }
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
