import Coherence
import CoherencePostgreSQL
import CoherenceStore
import Foundation

// A client process for the PostgreSQL reliability tests (Tests/CoherenceTests/
// PostgreSQLProcessTests.swift). One line on standard output per step:
//
//   READY            the store is open (with remote-change notifications on)
//   DONE <retries>   (--increment N) N fetch-increment-saves of the counter committed, with the
//                    error merge policy, retrying conflicts; the process exits 0
//   COMMITTING       (--hang-save N) a save inserting N items wrote its rows and stopped before
//                    its COMMIT (the coordinator's test hook); it blocks until killed
//   SAVED            (--insert NAME) one save inserting an item NAME committed
//   HEARD            (--await-item NAME) a remote change arrived after which the store holds
//                    an item NAME
//   CHANGED          (--change-items) in separate transactions: the item `a` deleted by a
//                    context, an item `c` inserted, every item's batch set to 7 by a batch
//                    update, an item `d` batch-inserted, the item `x` batch-deleted
//   MIGRATING <at>   (--migrate-stop-at AT, --staged-stop-at AT) the migration of Migrations.swift
//                    reached AT and blocks until killed (AT `none`: it runs to its end)
//   MIGRATED         the migration finished; the process exits 0
//
//   CoherencePGClient --store IGNORED --author IGNORED --url URL
//                     [--increment N] [--hang-save N] [--await-item NAME] [--insert NAME] [--step]
//                     [--change-items]
//                     [--migrate-stop-at AT | --staged-stop-at AT]
//                     [--history]
//   --step  wait for a line on standard input before the work (after READY)
//   --history  open the store with persistent history tracking on too
//
// Errors go to standard error with exit status 1.

/// The models the tests use too (same entities: same version hash).
final class PGCounter: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var value: Int = 0
}
final class PGItem: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var batch: Int = 0
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("CoherencePGClient: \(message)\n".utf8))
    exit(1)
}

var options: [String: String] = [:]
var flags: Set<String> = []
var rest = Array(CommandLine.arguments.dropFirst())
while let name = rest.first {
    rest.removeFirst()
    if name == "--step" || name == "--history" || name == "--change-items" {
        flags.insert(name)
    } else if let value = rest.first {
        options[name] = value
        rest.removeFirst()
    } else {
        fail("\(name) needs a value")
    }
}

do {
    guard let text = options["--url"], let url = URL(string: text) else { fail("--url URL is required") }
    if options["--migrate-stop-at"] != nil || options["--staged-stop-at"] != nil {
        migrate(url, migrateStopAt: options["--migrate-stop-at"], stagedStopAt: options["--staged-stop-at"])
    }
    let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [PGCounter.self, PGItem.self]))
    try coordinator.addPersistentStore(
        type: .postgreSQL, at: url,
        options: StoreOptions(persistentHistoryTracking: flags.contains("--history"), remoteChangeNotificationPost: true))
    let changes = coordinator.remoteChanges
    say("READY")
    if flags.contains("--step") { _ = readLine() }
    if let n = options["--increment"].flatMap(Int.init) {
        var retries = 0
        for _ in 0..<n {
            while true {
                let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
                context.mergePolicy = .error
                do {
                    try context.performAndWait {
                        guard let counter = try context.fetch(FetchRequest<PGCounter>()).first else { fail("no counter") }
                        counter.value += 1
                        try context.save()
                    }
                    break
                } catch let error as CoherenceError where error.code == .conflict {
                    retries += 1
                }
            }
        }
        say("DONE \(retries)")
    }
    if let name = options["--insert"] {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            PGItem(context: context).name = name
            try context.save()
        }
        say("SAVED")
    }
    if flags.contains("--change-items") {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for item in try context.fetch(FetchRequest<PGItem>(predicate: #Predicate { $0.name == "a" })) { context.delete(item) }
            try context.save()
            PGItem(context: context).name = "c"
            try context.save()
            _ = try context.execute(BatchUpdateRequest<PGItem>(propertiesToUpdate: ["batch": 7]))
            _ = try context.execute(BatchInsertRequest<PGItem>(objects: [["name": "d", "batch": 7]]))
            _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest<PGItem>(predicate: #Predicate { $0.name == "x" })))
        }
        say("CHANGED")
    }
    if let name = options["--await-item"] {
        let request = FetchRequest<PGItem>(predicate: #Predicate { $0.name == name })
        if try coordinator.count(for: request) == 0 {
            for await _ in changes where try coordinator.count(for: request) > 0 { break }
        }
        say("HEARD")
    }
    if let n = options["--hang-save"].flatMap(Int.init) {
        coordinator.beforeCommitHook.withLock {
            $0 = { _ in
                say("COMMITTING")
                DispatchSemaphore(value: 0).wait()  // until the test kills the process
            }
        }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for i in 0..<n {
                let item = PGItem(context: context)
                item.name = "hung"
                item.batch = i
            }
            try context.save()
        }
        fail("the save blocked before its commit returned")
    }
} catch {
    fail("\(error)")
}
