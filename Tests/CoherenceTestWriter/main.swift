import Coherence
import Foundation

// A second process for the remote-change tests (Tests/CoherenceTests/RemoteChangeTests.swift):
// opens a SQLite store with remote-change notifications on and commits to it, reporting each
// step on standard output, one line each:
//
//   READY              the store is open
//   SAVED <n>          save number n committed
//   HEARD              (with --await-others) the other writers' notes arrived
//   DONE               every save committed; the process exits 0
//
//   CoherenceTestWriter --store PATH --author NAME [--inserts N] [--set-text TEXT] [--step]
//                       [--await-others N] [--history]
//
//   --inserts N     N saves, each inserting one RemoteNote (author, sequence 1...N); 0: forever
//   --set-text T    one save setting `text` of every RemoteNote to T
//   --step          before each save, wait for a line on standard input (the parent's "go")
//   --await-others N  after the saves, wait (through remote-change notifications, at most 60 s)
//                   until the store holds N notes of other authors
//   --history       open the store with persistent history tracking
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
            case "--history": history = true
            case "--await-others": awaitOthers = value.flatMap { Int($0) }; i += 1
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
do {
    let model = try ManagedObjectModel(types: [RemoteNote.self])
    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    try coordinator.addPersistentStore(
        type: .sqlite, at: URL(fileURLWithPath: path),
        options: StoreOptions(persistentHistoryTracking: arguments.history, remoteChangeNotificationPost: true))
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: arguments.author)
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
    if let inserts = arguments.inserts {
        var n = 0
        while inserts == 0 || n < inserts {
            n += 1
            let sequence = n
            try save {
                let note = RemoteNote(context: context)
                note.author = arguments.author
                note.sequence = sequence
                note.text = "\(arguments.author) \(sequence)"
            }
        }
    }
    if let text = arguments.setText {
        try save {
            for note in try context.fetch(FetchRequest<RemoteNote>()) { note.text = text }
        }
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
    say("DONE")
} catch {
    fail("\(error)")
}
