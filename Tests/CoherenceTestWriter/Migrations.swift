import Coherence
import CoherenceContext
import CoherenceStore
import Foundation

// The migrations the migration-safety tests run in this process and kill
// (Tests/CoherenceTests/MigrationSafetyTests.swift).

/// RemoteNote's next version: `text` renamed `body`, which rebuilds the table.
func renamedNoteModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [
        EntityDescription(
            name: "RemoteNote",
            properties: [
                AttributeDescription(name: "author", type: .string, defaultValue: ""),
                AttributeDescription(name: "sequence", type: .integer64, defaultValue: 0),
                AttributeDescription(name: "body", type: .string, defaultValue: "", renamingIdentifier: "text")
            ])
    ])
}

/// Two custom stages from RemoteNote's version: `copy text` adds `body` and fills it with the
/// text in capitals (after its step); `drop text` sets every author to `migrated` (before its
/// step, which removes `text`).
func stagedNoteMigration(handlerReached: @escaping @Sendable () -> Void) throws -> (StagedMigrationManager, ManagedObjectModel) {
    func model(_ names: [String]) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "RemoteNote",
                properties: names.map { name in
                    name == "sequence"
                        ? AttributeDescription(name: name, type: .integer64, defaultValue: 0)
                        : AttributeDescription(name: name, type: .string, defaultValue: "")
                })
        ])
    }
    let v1 = try ManagedObjectModel(types: [RemoteNote.self])
    let v2 = try model(["author", "sequence", "text", "body"])
    let v3 = try model(["author", "sequence", "body"])
    var copy = CustomMigrationStage(migratingFrom: v1, to: v2, label: "copy text")
    copy.didMigrateHandler = { context in
        for note in try context.fetch(FetchRequest<ManagedObject>(entityName: "RemoteNote")) {
            try note.setValue((try note.value(forKey: "text") as? String ?? "").uppercased(), forKey: "body")
        }
    }
    var drop = CustomMigrationStage(migratingFrom: v2, to: v3, label: "drop text")
    drop.willMigrateHandler = { context in
        for note in try context.fetch(FetchRequest<ManagedObject>(entityName: "RemoteNote")) {
            try note.setValue("migrated", forKey: "author")
        }
        handlerReached()
    }
    return (StagedMigrationManager([copy, drop]), v3)
}

/// Runs the migration the arguments ask for, reporting on standard output, and exits.
func migrate(path: String, _ arguments: Arguments) -> Never {
    let url = URL(fileURLWithPath: path)
    /// Reports reaching `point` and, when it is the one asked for, blocks until killed.
    @Sendable func reached(_ point: String, stopAt: String?) {
        guard point == stopAt else { return }
        say("MIGRATING \(point)")
        if arguments.stagedPauseAt != nil {
            _ = readLine()
            return
        }
        DispatchSemaphore(value: 0).wait()
    }
    do {
        if let point = arguments.stagedStopAt ?? arguments.stagedPauseAt {
            let (manager, v3) = try stagedNoteMigration { reached("handler", stopAt: point) }
            InferredMigration.stepHook = { reached($0, stopAt: point) }
            StagedMigrationManager.stepHook = { reached($0, stopAt: point) }
            MigrationCopy.lockWaitHook = { say("WAITING") }
            let coordinator = PersistentStoreCoordinator(managedObjectModel: v3)
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(stagedMigrationManager: manager))
        } else {
            let stopAt = arguments.migrateStopAt
            InferredMigration.stepHook = { reached($0, stopAt: stopAt) }
            // The migration's progress is a child of this one (one unit).
            let progress = Progress(totalUnitCount: 1)
            if let limit = arguments.migrateStopAfter {
                CoherenceLogging.logger = LineLogger()
                InferredMigration.progressObserver.withLock {
                    $0 = { _, completed, total in
                        say("PROGRESS \(completed) \(total) \(progress.fractionCompleted)")
                        if limit > 0 && completed >= limit { DispatchSemaphore(value: 0).wait() }
                    }
                }
            }
            progress.becomeCurrent(withPendingUnitCount: 1)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try renamedNoteModel())
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            progress.resignCurrent()
            if arguments.migrateStopAfter != nil { say("FRACTION \(progress.fractionCompleted)") }
        }
        say("MIGRATED")
        exit(0)
    } catch {
        fail("\(error)")
    }
}

/// Writes the library's migration log lines to standard output: `LOG <text>`.
struct LineLogger: CoherenceLogger {
    var level: LogLevel { .info }
    func log(_ message: LogMessage) {
        if message.category == "migration" { say("LOG \(message.text)") }
    }
}
