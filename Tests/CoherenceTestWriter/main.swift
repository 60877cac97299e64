import Coherence
import CoherenceSQLite
import CoherenceStore
import Foundation

// A second process for the remote-change tests (Tests/CoherenceTests/RemoteChangeTests.swift):
// opens a SQLite store with remote-change notifications on and commits to it, reporting each
// step on standard output, one line each:
//
//   READY              the store is open
//   SAVED <n>          save number n committed
//   HEARD              (with --await-others) the other writers' notes arrived
//   CAUGHT UP <a>=<n> ...  (with --catch-up) the view context merged, from history, n notes
//                      of each other author a (sorted by author)
//   COMMITTING <n> <h> (with --hang-before-commit) the last save wrote its rows: its transaction,
//                      not committed, holds n notes and h history transactions; then it blocks
//   DONE               every save committed; the process exits 0
//
//   CoherenceTestWriter --store PATH --author NAME [--history] [--inserts N] [--set-text TEXT]
//                       [--step] [--await-others N] [--catch-up N] [--hang-before-commit]
//                       [--delete-sequence N]
//
//   --history       open the store with persistent history tracking on too
//   --inserts N     N saves, each inserting one RemoteNote (author, sequence 1...N); 0: forever
//   --set-text T    one save setting `text` of every RemoteNote to T
//   --delete-sequence N  one save deleting every RemoteNote whose sequence is N
//   --step          before each save, wait for a line on standard input (the parent's "go")
//   --await-others N  after the saves, wait (through remote-change notifications, at most 60 s)
//                   until the store holds N notes of other authors
//   --catch-up N    (with --history) after the saves, on each remote-change notification, fetch
//                   the history after the last transaction merged, leaving out this writer's
//                   author, and merge it into a view context, until the view context has merged
//                   N notes of other authors (at most 60 s). Subscribed before READY: the parent
//                   lets the others save only after every writer is READY (--step)
//   --migrate-stop-at STEP  instead of the rest: open the store (of RemoteNote rows) with the next
//                   version of the model (RemoteNote's `text` renamed `body`, which rebuilds the
//                   table), report MIGRATING STEP when the inferred migration reaches STEP
//                   (`rename`, `copy RemoteNote`, `indexes`, `drop`) and block until killed;
//                   STEP `none` lets it finish and reports MIGRATED
//   --migrate-stop-after N  the same migration, reporting PROGRESS <rows copied> <rows in all>
//                   <fraction of the parent Progress> at each progress update and LOG <text> for
//                   each migration log line; once N rows are copied, blocks until killed (0: never,
//                   and FRACTION <the parent's fraction> before MIGRATED)
//   --staged-stop-at POINT  instead of the rest: a staged migration with handlers (see
//                   Migrations.swift); at POINT (`stage drop text`, `handler`, `copy RemoteNote`,
//                   `replace`) reports MIGRATING POINT and blocks until killed; `none`: MIGRATED
//   --staged-pause-at POINT  the same staged migration; at POINT reports MIGRATING POINT and waits
//                   for a line on standard input, then goes on (MIGRATED, or the error, status 1)
//                   (a staged migration reports WAITING when another one holds the store's lock)
//   --increment N   N saves, each adding 1 to `sequence` of the note of author `counter` (made
//                   by the parent) fetched anew, under the merge policy --policy P (`error`, the
//                   default, `objectTrump`, `storeTrump`, `overwrite`, `rollback`); a save that
//                   throws `.conflict` is retried after a refresh; reports INCREMENTED <saves
//                   committed> <conflicts> (with --step, one line on standard input first)
//   --hang-before-commit  after the rest, one more save inserting a note (sequence N + 1) that
//                   stops inside the save, its rows and history written and COMMIT not run
//                   (the coordinator's test hook), reports COMMITTING and blocks until killed
//
// Errors go to standard error with exit status 1.

/// The model the tests use too (same entity, same attributes: same version hash).
final class RemoteNote: ManagedObject {
    @Attribute var author: String = ""
    @Attribute var sequence: Int = 0
    @Attribute var text: String = ""
}

struct Arguments {
    var store: String?
    var author = "writer"
    var inserts: Int?
    var setText: String?
    var step = false
    var awaitOthers: Int?
    var history = false
    var catchUp: Int?
    var hangBeforeCommit = false
    var deleteSequence: Int?
    var migrateStopAt: String?
    var migrateStopAfter: Int64?
    var stagedStopAt: String?
    var stagedPauseAt: String?
    var increment: Int?
    var policy = "error"

    init(_ args: [String]) {
        var i = 1
        while i < args.count {
            let value = i + 1 < args.count ? args[i + 1] : nil
            switch args[i] {
            case "--store": store = value; i += 1
            case "--author": author = value ?? author; i += 1
            case "--inserts": inserts = value.flatMap { Int($0) }; i += 1
            case "--set-text": setText = value; i += 1
            case "--step": step = true
            case "--await-others": awaitOthers = value.flatMap { Int($0) }; i += 1
            case "--history": history = true
            case "--catch-up": catchUp = value.flatMap { Int($0) }; i += 1
            case "--hang-before-commit": hangBeforeCommit = true
            case "--delete-sequence": deleteSequence = value.flatMap { Int($0) }; i += 1
            case "--migrate-stop-at": migrateStopAt = value; i += 1
            case "--migrate-stop-after": migrateStopAfter = value.flatMap { Int64($0) }; i += 1
            case "--staged-stop-at": stagedStopAt = value; i += 1
            case "--staged-pause-at": stagedPauseAt = value; i += 1
            case "--increment": increment = value.flatMap { Int($0) }; i += 1
            case "--policy": policy = value ?? policy; i += 1
            default: break
            }
            i += 1
        }
    }
}

/// Writes one line to standard output at once (unbuffered: the parent waits for it).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("CoherenceTestWriter: \(message)\n".utf8))
    exit(1)
}

let arguments = Arguments(CommandLine.arguments)
guard let path = arguments.store else { fail("--store PATH is required") }
if arguments.migrateStopAt != nil || arguments.migrateStopAfter != nil || arguments.stagedStopAt != nil
    || arguments.stagedPauseAt != nil
{
    migrate(path: path, arguments)
}
do {
    let model = try ManagedObjectModel(types: [RemoteNote.self])
    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    try coordinator.addPersistentStore(
        type: .sqlite, at: URL(fileURLWithPath: path),
        options: StoreOptions(persistentHistoryTracking: arguments.history, remoteChangeNotificationPost: true))
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: arguments.author)
    context.transactionAuthor = arguments.author
    // Subscribed before READY, so that every other writer's commit after it is heard.
    let heard = arguments.catchUp != nil ? coordinator.remoteChanges : nil
    say("READY")
    var saves = 0
    func save(_ change: () throws -> Void) throws {
        if arguments.step && readLine() == nil { fail("standard input closed before a save") }
        try context.performAndWait {
            try change()
            try context.save()
        }
        saves += 1
        say("SAVED \(saves)")
    }
    func insert(_ sequence: Int) throws {
        try save {
            let note = RemoteNote(context: context)
            note.author = arguments.author
            note.sequence = sequence
            note.text = "\(arguments.author) \(sequence)"
        }
    }
    if let inserts = arguments.inserts {
        var n = 0
        while inserts == 0 || n < inserts {
            n += 1
            try insert(n)
        }
    }
    if let text = arguments.setText {
        try save {
            for note in try context.fetch(FetchRequest<RemoteNote>()) { note.text = text }
        }
    }
    if let sequence = arguments.deleteSequence {
        try save {
            for note in try context.fetch(FetchRequest<RemoteNote>(predicate: #Predicate { $0.sequence == sequence })) {
                context.delete(note)
            }
        }
    }
    if let increments = arguments.increment {
        let policies: [String: MergePolicy] = [
            "error": .error, "objectTrump": .mergeByPropertyObjectTrump, "storeTrump": .mergeByPropertyStoreTrump,
            "overwrite": .overwrite, "rollback": .rollback
        ]
        guard let policy = policies[arguments.policy] else { fail("unknown policy \(arguments.policy)") }
        if arguments.step && readLine() == nil { fail("standard input closed before the increments") }
        context.mergePolicy = policy
        var committed = 0, conflicts = 0
        try context.performAndWait {
            while committed < increments {
                let counter = try context.fetch(FetchRequest<RemoteNote>(predicate: #Predicate { $0.author == "counter" }))
                guard let note = counter.first else { fail("no counter note") }
                note.sequence += 1
                do {
                    try context.save()
                    committed += 1
                } catch let error as CoherenceError where error.code == .conflict {
                    conflicts += 1
                    context.rollback()
                    context.refreshAllObjects()
                }
            }
        }
        say("INCREMENTED \(committed) \(conflicts)")
    }
    if let others = arguments.awaitOthers {
        let author = arguments.author
        let request = FetchRequest<RemoteNote>(predicate: #Predicate { $0.author != author })
        // Subscribed before looking, so that no change falls between the look and the wait.
        let changes = coordinator.remoteChanges
        if try coordinator.count(for: request) < others {
            DispatchQueue.global().asyncAfter(deadline: .now() + 60) { fail("the other writers' notes did not arrive in 60 s") }
            for await _ in changes where try coordinator.count(for: request) >= others { break }
        }
        say("HEARD")
    }
    if let expected = arguments.catchUp, let heard {
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "view")
        var token: PersistentHistoryToken?
        var merged: [String: Int] = [:]
        DispatchQueue.global().asyncAfter(deadline: .now() + 60) { fail("the view context did not catch up in 60 s") }
        // Only after a notification: each catch-up is one the notifications asked for.
        for await _ in heard {
            var request = PersistentHistoryChangeRequest.fetchHistory(after: token)
            request.excludedAuthors = [arguments.author]
            try view.performAndWait {
                for transaction in try view.execute(request).transactions {
                    view.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
                    token = transaction.token
                    for change in transaction.changes ?? [] where change.changeType == .insert {
                        // The merged object, as the view context now reads it.
                        guard let note = try view.existingObject(with: change.changedObjectID) as? RemoteNote,
                            note.author == transaction.author
                        else { fail("\(change.changedObjectID) is not a note of \(transaction.author ?? "nobody")") }
                        merged[note.author, default: 0] += 1
                    }
                }
            }
            if merged.values.reduce(0, +) >= expected { break }
        }
        say("CAUGHT UP " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    }
    if arguments.hangBeforeCommit {
        coordinator.beforeCommitHook.withLock {
            $0 = { identifier in
                // What the open transaction holds, read on the connection that wrote it.
                var counts: [Int64] = []
                if let store = coordinator.persistentStore(withIdentifier: identifier)?.engine as? SQLiteStore,
                    let connection = try? store.writerConnectionForSave()
                {
                    // (RemoteNote's table, then the history's.)
                    for table in model.entities.map({ SQLGenerator().table($0) }) + [HistorySQL.transactionTable] {
                        counts += (try? connection.prepare("SELECT count(*) FROM \(table)").rows { $0.int64(0) }) ?? []
                    }
                }
                say("COMMITTING \(counts.map(String.init).joined(separator: " "))")
                // Blocks until the parent kills the process.
                DispatchSemaphore(value: 0).wait()
            }
        }
        try insert((arguments.inserts ?? 0) + 1)
        fail("the save blocked before its commit returned")
    }
    say("DONE")
} catch {
    fail("\(error)")
}
