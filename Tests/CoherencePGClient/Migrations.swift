import Coherence
import CoherenceContext
import CoherencePostgreSQL
import CoherenceStore
import Foundation

// The migrations the PostgreSQL migration tests run in this process and kill
// (Tests/CoherenceTests/PostgreSQLMigrationTests.swift).

/// An entity whose attributes are strings (default "") or, for `batch`, an Integer 64 (default 0).
func itemEntity(_ names: [String], renamed: [String: String] = [:]) -> EntityDescription {
    EntityDescription(
        name: "PGItem",
        properties: names.map { name in
            name == "batch"
                ? AttributeDescription(name: name, type: .integer64, defaultValue: 0)
                : AttributeDescription(name: name, type: .string, defaultValue: "", renamingIdentifier: renamed[name])
        })
}

/// The counters, unchanged from the typed model.
func counterEntity() -> EntityDescription {
    EntityDescription(
        name: "PGCounter",
        properties: [
            AttributeDescription(name: "name", type: .string, defaultValue: ""),
            AttributeDescription(name: "value", type: .integer64, defaultValue: 0)
        ])
}

/// PGItem's next version: `name` renamed `title`, which rebuilds the table.
func renamedItemModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [counterEntity(), itemEntity(["title", "batch"], renamed: ["title": "name"])])
}

/// Two custom stages from the typed version: `title items` adds `title` and fills it with the
/// name in capitals (after its step); `drop names` sets every batch to -1 (before its step,
/// which removes `name`).
func stagedItemMigration(handlerReached: @escaping @Sendable () -> Void) throws -> (StagedMigrationManager, ManagedObjectModel) {
    let v1 = try ManagedObjectModel(types: [PGCounter.self, PGItem.self])
    let v2 = try ManagedObjectModel(entities: [counterEntity(), itemEntity(["name", "batch", "title"])])
    let v3 = try ManagedObjectModel(entities: [counterEntity(), itemEntity(["batch", "title"])])
    var title = CustomMigrationStage(migratingFrom: v1, to: v2, label: "title items")
    title.didMigrateHandler = { context in
        for item in try context.fetch(FetchRequest<ManagedObject>(entityName: "PGItem")) {
            try item.setValue((try item.value(forKey: "name") as? String ?? "").uppercased(), forKey: "title")
        }
    }
    var drop = CustomMigrationStage(migratingFrom: v2, to: v3, label: "drop names")
    drop.willMigrateHandler = { context in
        for item in try context.fetch(FetchRequest<ManagedObject>(entityName: "PGItem")) {
            try item.setValue(-1, forKey: "batch")
        }
        handlerReached()
    }
    return (StagedMigrationManager([title, drop]), v3)
}

/// Runs the migration of the store at `url` the options ask for (`--migrate-stop-at POINT` or
/// `--staged-stop-at POINT`, `none` to run to the end), reporting on standard output, and exits:
/// `MIGRATING <point>` when it stops at the point (until killed), `MIGRATED` when done.
func migrate(_ url: URL, migrateStopAt: String?, stagedStopAt: String?) -> Never {
    /// Reports reaching `point` and, when it is the one asked for, blocks until killed.
    @Sendable func reached(_ point: String, stopAt: String?) {
        guard point == stopAt else { return }
        say("MIGRATING \(point)")
        DispatchSemaphore(value: 0).wait()
    }
    do {
        if let point = stagedStopAt {
            let (manager, v3) = try stagedItemMigration { reached("handler", stopAt: point) }
            InferredMigration.stepHook = { reached($0, stopAt: point) }
            StagedMigrationManager.stepHook = { reached($0, stopAt: point) }
            let coordinator = PersistentStoreCoordinator(managedObjectModel: v3)
            try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: StoreOptions(stagedMigrationManager: manager))
        } else {
            InferredMigration.stepHook = { reached($0, stopAt: migrateStopAt) }
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try renamedItemModel())
            try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        }
        say("MIGRATED")
        exit(0)
    } catch {
        fail("\(error)")
    }
}
