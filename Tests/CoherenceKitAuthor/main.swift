import Coherence
import CoherencePostgreSQL
import Foundation

// An author process for the history-kit tests (Tests/CoherenceTests/HistoryKitProcessTests.swift):
// opens the notes store (persistent history and remote changes on) in a container whose view
// context writes as AUTHOR, runs a PersistentHistoryTrackingKit for AUTHOR (unless --batch), and
// follows commands read from standard input, one per line, answering on standard output:
//
//   READY                       the store is open and the kit started
//   insert N                    → SAVED <transaction number>   (a note AUTHOR/N, text "AUTHOR N")
//   insert-many N COUNT         → SAVED <transaction number>   (COUNT saves: notes N, N+1, …, one each)
//   batch-insert N...           → SAVED <transaction number>   (one batch insert request)
//   update A N TEXT             → SAVED <transaction number>   (note A/N's text)
//   delete A N                  → SAVED <transaction number>
//   expect A N TEXT             → OK | TIMEOUT <seen>          waits until the view context shows
//                                                              note A/N with TEXT ("-": gone), looking
//                                                              after each of its events (30 s at most)
//   own                         → OWN <n>   transactions of AUTHOR the kit handed to its merge hooks
//   merged [COUNT]              → MERGED <n>,<n>,…   the numbers of the other authors' transactions
//                                 the kit handed to its merge hooks, in order (after waiting until
//                                 there are COUNT, looking after each view event; 30 s at most)
//   quit                        → DONE, exit 0 (after the kit's round under way, if any)
//
//   CoherenceKitAuthor --store PATH --author NAME --authors A,B,C [--batch-authors X,Y] [--batch]
//                      [--url POSTGRESQL-URL] [--tracker]
//
//   --url      the notes store is the PostgreSQL store at the URL (PATH is then unused)
//   --tracker  runs RCDataKit's PersistentHistoryTracker for AUTHOR instead of the kit (`own` and
//              `merged` then answer 0 and nothing)
//
// With KIT_LOG in the environment, the kit logs everything (level 2) to standard error.
//
// Errors go to standard error with exit status 1.

/// The model the tests use too (same entity, same attributes: same version hash).
final class RemoteNote: ManagedObject {
    @Attribute var author: String = ""
    @Attribute var sequence: Int = 0
    @Attribute var text: String = ""
}

struct StderrLogger: PersistentHistoryTrackingKitLoggerProtocol {
    func log(type: PersistentHistoryTrackingKitLogType, message: String) {
        FileHandle.standardError.write(Data("[\(type)] \(message)\n".utf8))
    }
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("CoherenceKitAuthor: \(message)\n".utf8))
    exit(1)
}

var options: [String: String] = [:]
var batchOnly = false
var usesTracker = false
var index = 1
let args = CommandLine.arguments
while index < args.count {
    if args[index] == "--batch" {
        batchOnly = true
    } else if args[index] == "--tracker" {
        usesTracker = true
    } else if index + 1 < args.count {
        options[args[index]] = args[index + 1]
        index += 1
    }
    index += 1
}
guard let path = options["--store"], let author = options["--author"] else { fail("--store and --author are required") }
let allAuthors = (options["--authors"] ?? author).split(separator: ",").map(String.init)
let batchAuthors = (options["--batch-authors"] ?? "").split(separator: ",").map(String.init)

let storeURL = URL(fileURLWithPath: path)
let connect = GenericConnect<ContextStrategy.Direct>(name: "Notes", managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
do {
    let storeOptions = StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true)
    let server = options["--url"].flatMap { URL(string: $0) }
    try connect.attachPersistentStore(
        at: storeURL.deletingLastPathComponent(),
        for: server.map { StoreConfiguration(type: .postgreSQL, location: $0, options: storeOptions) }
            ?? StoreConfiguration(fileName: storeURL.lastPathComponent, options: storeOptions))
} catch {
    fail("\(error)")
}
let view = connect.viewContext
view.transactionAuthor = author
let ownMerged = LockedValue(0)
let othersMerged = LockedValue<[Int64]>([])
/// Signalled after each merge hook call.
let mergeHookCalled = DispatchSemaphore(value: 0)
let tracker: PersistentHistoryTracker? =
    usesTracker && !batchOnly ? PersistentHistoryTracker(container: connect, currentAuthor: TransactionAuthor(author)) : nil
if let tracker { await tracker.startMonitoring() }
let kit: PersistentHistoryTrackingKit? =
    batchOnly || usesTracker
    ? nil
    : PersistentHistoryTrackingKit(
        container: connect, currentAuthor: author, allAuthors: allAuthors, batchAuthors: batchAuthors,
        logger: ProcessInfo.processInfo.environment["KIT_LOG"] == nil ? nil : StderrLogger(),
        logLevel: ProcessInfo.processInfo.environment["KIT_LOG"] == nil ? 1 : 2)
if let kit {
    await kit.registerMergeHook { input in
        ownMerged.withLock { $0 += input.transactions.filter { $0.author == author }.count }
        othersMerged.withLock { $0 += input.transactions.filter { $0.author != author }.map(\.transactionNumber) }
        mergeHookCalled.signal()
        return .goOn
    }
}
let viewEvents = view.events

/// Saves `body`'s changes as AUTHOR; answers with the transaction number.
func save(_ body: @escaping (ManagedObjectContext) throws -> Void) throws {
    let context = connect.newBackgroundContext()
    context.transactionAuthor = author
    try context.performAndWait {
        try body(context)
        try context.save()
    }
    let token = try connect.persistentStoreCoordinator.currentPersistentHistoryToken()
    say("SAVED \(token?.transactionNumber ?? 0)")
}

/// Notes of `noteAuthor` with `sequence`, read in `context`.
func notes(_ context: ManagedObjectContext, _ noteAuthor: String, _ sequence: Int) throws -> [RemoteNote] {
    try context.fetch(FetchRequest<RemoteNote>(predicate: #Predicate { $0.author == noteAuthor && $0.sequence == sequence }))
}

/// What the view context shows of note A/N: its registered object's text ("-": none).
@MainActor func shown(_ noteAuthor: String, _ sequence: Int) -> String {
    let ids = (try? connect.persistentStoreCoordinator.fetchIDs(noteAuthor, sequence)) ?? []
    for id in ids {
        if let note = view.registeredObject(for: id) as? RemoteNote, !note.isDeleted { return note.text }
        if let note = try? view.existingObject(with: id) as? RemoteNote { return note.text }
    }
    return "-"
}

extension PersistentStoreCoordinator {
    func fetchIDs(_ noteAuthor: String, _ sequence: Int) throws -> [ObjectID] {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: self)
        return try context.performAndWait { try notes(context, noteAuthor, sequence).map(\.objectID) }
    }
}

say("READY")
let lines = AsyncStream<String> { continuation in
    Thread {
        while let line = readLine() { continuation.yield(line) }
        continuation.finish()
    }.start()
}
/// Follows the commands until `quit` or the end of standard input.
@MainActor func runCommands() async throws {
    var events = viewEvents.makeAsyncIterator()
    lineLoop: for await line in lines {
        let words = line.split(separator: " ", maxSplits: 3).map(String.init)
        switch words.first {
        case "insert"?:
            let n = Int(words[1]) ?? 0
            try save { c in
                let note = RemoteNote(context: c)
                note.author = author
                note.sequence = n
                note.text = "\(author) \(n)"
            }
        case "insert-many"?:
            let first = Int(words[1]) ?? 0, count = words.count > 2 ? Int(words[2]) ?? 0 : 0
            var last: Int64 = 0
            for n in first..<(first + count) {
                let context = connect.newBackgroundContext()
                context.transactionAuthor = author
                try context.performAndWait {
                    let note = RemoteNote(context: context)
                    note.author = author
                    note.sequence = n
                    note.text = "\(author) \(n)"
                    try context.save()
                }
                last = try connect.persistentStoreCoordinator.currentPersistentHistoryToken()?.transactionNumber ?? 0
            }
            say("SAVED \(last)")
        case "merged"?:
            let wanted = words.count > 1 ? Int(words[1]) ?? 0 : 0
            let deadline = Date().addingTimeInterval(30)
            while othersMerged.withLock({ $0.count }) < wanted && Date() < deadline {
                // The next merge hook call, waited for off the main actor (whose queue the kit's
                // merges need), until the deadline at most.
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().async {
                        _ = mergeHookCalled.wait(timeout: .now() + max(0, deadline.timeIntervalSinceNow))
                        done.resume()
                    }
                }
            }
            say("MERGED " + othersMerged.withLock { $0 }.map(String.init).joined(separator: ","))
        case "batch-insert"?:
            let objects: [[String: any Sendable]] = words.dropFirst().flatMap { $0.split(separator: " ") }.map {
                ["author": author, "sequence": Int($0) ?? 0, "text": "\(author) \($0)"]
            }
            let context = connect.newBackgroundContext()
            context.transactionAuthor = author
            _ = try context.performAndWait { try context.execute(BatchInsertRequest<RemoteNote>(objects: objects)) }
            let token = try connect.persistentStoreCoordinator.currentPersistentHistoryToken()
            say("SAVED \(token?.transactionNumber ?? 0)")
        case "update"?:
            let a = words[1], n = Int(words[2]) ?? 0, text = words.count > 3 ? words[3] : ""
            try save { c in for note in try notes(c, a, n) { note.text = text } }
        case "delete"?:
            let a = words[1], n = Int(words[2]) ?? 0
            try save { c in for note in try notes(c, a, n) { c.delete(note) } }
        case "expect"?:
            let a = words[1], n = Int(words[2]) ?? 0, text = words.count > 3 ? words[3] : ""
            let deadline = Date().addingTimeInterval(30)
            var seen = await MainActor.run { shown(a, n) }
            while seen != text && Date() < deadline {
                // Each merge posts an event on the view context: look again after each.
                guard await events.next() != nil else { break }
                seen = await MainActor.run { shown(a, n) }
            }
            say(seen == text ? "OK" : "TIMEOUT \(seen)")
        case "own"?:
            say("OWN \(ownMerged.withLock { $0 })")
        case "quit"?:
            break lineLoop
        default:
            fail("unknown command: \(line)")
        }
    }
}

do {
    try await runCommands()
} catch {
    fail("\(error)")
}
// The round under way (which may have merged without recording its progress yet) finishes first.
_ = await kit?.mergePendingHistory()
kit?.stop()
await tracker?.stopMonitoring()
say("DONE")
exit(0)
