import Coherence
import Foundation

// Persistent history between two processes. `swift run HistoryDemo` opens a SQLite store with
// persistent history and remote-change notifications on, and starts a second copy of itself
// (`HistoryDemo --second-author <store>`) on the same file. Each process saves under its own
// `transactionAuthor`; each hears the other's commits as remote-change notifications and
// catches up from history into its view context, leaving out its own transactions.
//
//   first                                   second
//   start second, wait for "READY"   ◀───── open the store, listen, "READY"
//   save two tasks                   ─ ─ ─▶ notified: merge them from history, "CAUGHT UP"
//   send "go"                        ──────▶ save a task, finish one of first's; "DONE", exit
//                                    ◀─ ─ ─
//   notified: merge it from history; the view context shows the finished task
//
// The processes wait for each other through pipes (──) and remote-change notifications (─ ─)
// only: no sleeps.

final class TodoItem: ManagedObject {
    @Attribute var title: String = ""
    @Attribute var done: Bool = false
    @Attribute var createdBy: String = ""
}

/// The first process's author and the second's.
let firstAuthor = "first"
let secondAuthor = "second"

/// Writes a line to standard output at once, unbuffered (the first process reads the second's
/// through a pipe, and prints them among its own).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Ends the process with a message on standard error.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("HistoryDemo: \(message)\n".utf8))
    exit(1)
}

/// A process's way into the store: its coordinator, the context it saves with (under its
/// author) and its view context, which catches up from history.
struct Participant {
    let author: String
    let coordinator: PersistentStoreCoordinator
    let writer: ManagedObjectContext
    let view: ManagedObjectContext
    /// The last transaction merged into the view context.
    var token: PersistentHistoryToken?
    /// The number of changes merged so far.
    var merged = 0

    init(author: String, store: URL) throws {
        self.author = author
        coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [TodoItem.self]))
        try coordinator.addPersistentStore(
            type: .sqlite, at: store, options: StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true))
        writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "\(author)-writer")
        writer.transactionAuthor = author
        view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "\(author)-view")
    }

    /// Merges into the view context the transactions other authors wrote since the last one
    /// merged, printing each change.
    mutating func catchUp() throws {
        var request = PersistentHistoryChangeRequest.fetchHistory(after: token)
        request.excludedAuthors = [author]
        let label = author
        let view = self.view
        let transactions = try view.performAndWait {
            let transactions = try view.execute(request).transactions
            for transaction in transactions {
                view.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
                for change in transaction.changes ?? [] {
                    let task = try? view.existingObject(with: change.changedObjectID) as? TodoItem
                    let what = task.map { "\"\($0.title)\"\($0.done ? " (done)" : "")" } ?? "\(change.changedObjectID)"
                    say("[\(label)] merged from history: \(transaction.author ?? "?") \(change.changeType) \(what)")
                }
            }
            return transactions
        }
        token = transactions.last?.token ?? token
        merged += transactions.reduce(0) { $0 + ($1.changes?.count ?? 0) }
    }

    /// Tells of a remote-change notification, then catches up.
    mutating func heard(_ change: PersistentStoreRemoteChange) throws {
        say("[\(author)] remote change in \(change.storeURL.lastPathComponent)")
        try catchUp()
    }

    /// The view context's tasks, as "title (by author)", sorted.
    func viewTasks() throws -> [String] {
        let view = self.view
        return try view.performAndWait {
            try view.fetch(FetchRequest<TodoItem>(sortBy: [SortDescriptor(\.title)]))
                .map { "\($0.title)\($0.done ? " ✓" : "") (by \($0.createdBy))" }
        }
    }
}

/// The lines of a pipe, read on a background queue as they come.
final class LineReader: @unchecked Sendable {
    // @unchecked Sendable: `lines` and `ended` are used only while `condition` is locked.
    private let condition = NSCondition()
    private var lines: [String] = []
    private var ended = false

    init(_ handle: FileHandle) {
        DispatchQueue.global().async { [self] in
            var buffer = Data()
            while case let data = handle.availableData, !data.isEmpty {
                buffer.append(data)
                while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer = Data(buffer[(newline + 1)...])
                    condition.withLock { lines.append(line) }
                    condition.signal()
                }
            }
            condition.withLock { ended = true }
            condition.signal()
        }
    }

    /// The next line, waiting for it; nil once the pipe is closed and every line was read.
    func next() -> String? {
        condition.withLock {
            while lines.isEmpty && !ended { condition.wait() }
            return lines.isEmpty ? nil : lines.removeFirst()
        }
    }
}

// A guard against a stuck run: the demo takes well under a second.
DispatchQueue.global().asyncAfter(deadline: .now() + 9) { fail("no progress in 9 s") }

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "--second-author" {
    // ─── The second process ────────────────────────────────────────────────────────────────
    var me = try Participant(author: secondAuthor, store: URL(fileURLWithPath: arguments[2]))
    let changes = me.coordinator.remoteChanges  // listening before "READY"
    say("READY")
    // The first process's two inserts.
    for await change in changes {
        try me.heard(change)
        if me.merged >= 2 { break }
    }
    say("CAUGHT UP")
    guard readLine() == "go" else { fail("the first process did not say go") }
    let writer = me.writer
    try writer.performAndWait {
        let task = TodoItem(context: writer)
        task.title = "Water the plants"
        task.createdBy = secondAuthor
        let first = try writer.fetch(FetchRequest<TodoItem>(predicate: #Predicate { $0.title == "Buy milk" })).first
        first?.done = true
        try writer.save()
    }
    say("[\(secondAuthor)] saved: inserted \"Water the plants\", finished \"Buy milk\"")
    say("DONE")
    exit(0)
}

// ─── The first process ─────────────────────────────────────────────────────────────────────
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-history-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
let store = directory.appendingPathComponent("Tasks.sqlite")
var me = try Participant(author: firstAuthor, store: store)
let changes = me.coordinator.remoteChanges
say("HistoryDemo: two processes, one store (\(store.lastPathComponent)), history and remote-change notifications on")

// The second process, its standard output read line by line.
let second = Process()
guard let executable = Bundle.main.executableURL else { fail("cannot tell where this executable is") }
second.executableURL = executable
second.arguments = ["--second-author", store.path]
let output = Pipe()
let input = Pipe()
second.standardOutput = output
second.standardInput = input
let secondLines = LineReader(output.fileHandleForReading)
try second.run()

/// Prints the second process's lines until `last` (not printed); false when its output ended.
func relay(until last: String) -> Bool {
    while let line = secondLines.next() {
        if line == last { return true }
        say(line)
    }
    return false
}

guard relay(until: "READY") else { fail("the second process ended before it was ready") }
say("[\(firstAuthor)] the second process (pid \(second.processIdentifier)) is listening")

// Save two tasks; the view context holds them (and will show the second process's edit).
let writer = me.writer
try writer.performAndWait {
    for title in ["Buy milk", "Call Bob"] {
        let task = TodoItem(context: writer)
        task.title = title
        task.createdBy = firstAuthor
    }
    try writer.save()
}
say("[\(firstAuthor)] saved: inserted \"Buy milk\", \"Call Bob\"")
say("[\(firstAuthor)] view context: \(try me.viewTasks().joined(separator: ", "))")
let view = me.view
let milk = try view.performAndWait {
    try view.fetch(FetchRequest<TodoItem>(predicate: #Predicate { $0.title == "Buy milk" })).first?.objectID
}

// The second process catches up; then it saves, and ends.
guard relay(until: "CAUGHT UP") else { fail("the second process ended early") }
input.fileHandleForWriting.write(Data("go\n".utf8))
guard relay(until: "DONE") else { fail("the second process ended early") }
second.waitUntilExit()
guard second.terminationStatus == 0 else { fail("the second process exited with status \(second.terminationStatus)") }

// Its save arrives as a remote change; catch up from history.
for await change in changes {
    try me.heard(change)
    if me.merged >= 2 { break }  // the insert and the update
}
let milkDone = view.performAndWait { milk.flatMap { view.registeredObject(for: $0) as? TodoItem }?.done }
say("[\(firstAuthor)] \"Buy milk\", held by the view context since before: done = \(milkDone.map(String.init) ?? "?")")
say("[\(firstAuthor)] view context: \(try me.viewTasks().joined(separator: ", "))")

let history = try me.coordinator.execute(.fetchHistory(after: nil)).transactions
say(
    "History: \(history.map { "#\($0.token.transactionNumber) \($0.author ?? "?") (\($0.changes?.count ?? 0) changes)" }.joined(separator: ", "))"
)
say("The second process exited with status 0; done.")
// Detach the store (which stops its remote-change watcher) before its directory goes.
for attached in me.coordinator.persistentStores { try me.coordinator.remove(attached) }
try? FileManager.default.removeItem(at: directory)
