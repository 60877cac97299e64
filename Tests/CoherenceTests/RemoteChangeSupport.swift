import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The entity `CoherenceTestWriter` writes (the same class there: same model version hash).
final class RemoteNote: ManagedObject {
    @Attribute var author: String = ""
    @Attribute var sequence: Int = 0
    @Attribute var text: String = ""
}

/// A coordinator with the SQLite store at `url` (or the store of `type` there: a PostgreSQL
/// store's URL), remote-change notifications on (and persistent history tracking when
/// `history`).
func remoteCoordinator(
    _ url: URL, type: StoreType = .sqlite, notifications: Bool = true, history: Bool = false
) throws -> PersistentStoreCoordinator {
    let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
    try coordinator.addPersistentStore(
        type: type, at: url, options: StoreOptions(persistentHistoryTracking: history, remoteChangeNotificationPost: true))
    return coordinator
}

/// A store file in a test's own directory (or, of `type` `.postgreSQL`, the test's schema
/// `notes`), a coordinator on it with remote-change notifications on, and what that coordinator
/// hears.
struct ListeningStore {
    let directory: TemporaryDirectory
    let url: URL
    let type: StoreType
    let history: Bool
    let coordinator: PersistentStoreCoordinator
    let heard: RemoteChangeRecorder

    /// `history`: the store tracks persistent history too.
    init(_ name: String = #function, type: StoreType = .sqlite, history: Bool = false) throws {
        directory = try TemporaryDirectory(name)
        url = type == .postgreSQL ? try directory.postgreSQLURL("notes") : directory.file("notes.sqlite")
        self.type = type
        self.history = history
        coordinator = try remoteCoordinator(url, type: type, history: history)
        heard = RemoteChangeRecorder(coordinator)
    }

    /// Another coordinator on the same store, with the same options.
    func another() throws -> PersistentStoreCoordinator { try remoteCoordinator(url, type: type, history: history) }
}

/// Inserts one note through a new context (named `author`, its transaction author) and saves.
func insertNote(_ coordinator: PersistentStoreCoordinator, author: String, sequence: Int = 1) throws {
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: author)
    context.transactionAuthor = author
    try context.performAndWait {
        let note = RemoteNote(context: context)
        note.author = author
        note.sequence = sequence
        note.text = "\(author) \(sequence)"
        try context.save()
    }
}

/// The number of notes in the store (of `author` when given), read from the store.
func noteCount(_ coordinator: PersistentStoreCoordinator, author: String? = nil) throws -> Int {
    guard let author else { return try coordinator.count(for: FetchRequest<RemoteNote>()) }
    return try coordinator.count(for: FetchRequest<RemoteNote>(predicate: #Predicate { $0.author == author }))
}

/// What a coordinator posted: its remote-change notifications, the values of its
/// `remoteChanges` stream, and the checks its watcher made.
final class RemoteChangeRecorder: Sendable {
    struct Posted: Sendable {
        var object: ObjectIdentifier?
        var url: URL?
        var identifier: UUID?
        var hasToken: Bool
    }

    let coordinator: PersistentStoreCoordinator
    let notifications = LockedValue<[Posted]>([])
    let streamed = LockedValue<[PersistentStoreRemoteChange]>([])
    /// Checks the coordinator made after a wake-up, with whether each posted a change.
    let checks = LockedValue<[Bool]>([])
    private let notified = DispatchSemaphore(value: 0)
    private let checked = DispatchSemaphore(value: 0)
    private let streamedOne = DispatchSemaphore(value: 0)
    private let observer = LockedValue<(any NSObjectProtocol)?>(nil)
    /// Reads the stream until it ends (when the coordinator goes away).
    let reader: Task<Int, Never>

    init(_ coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
        // Subscribed now, before anything is committed.
        let stream = coordinator.remoteChanges
        let streamed = self.streamed, streamedOne = self.streamedOne
        reader = Task {
            var count = 0
            for await change in stream {
                streamed.withLock { $0.append(change) }
                streamedOne.signal()
                count += 1
            }
            return count
        }
        let notifications = self.notifications, notified = self.notified
        let token = NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: coordinator, queue: nil) {
            note in
            let info = note.userInfo ?? [:]
            let posted = Posted(
                object: (note.object as AnyObject?).map(ObjectIdentifier.init),
                url: info[PersistentStoreCoordinator.RemoteChangeKey.storeURL] as? URL,
                identifier: info[PersistentStoreCoordinator.RemoteChangeKey.storeIdentifier] as? UUID,
                hasToken: info[PersistentStoreCoordinator.RemoteChangeKey.historyToken] != nil)
            notifications.withLock { $0.append(posted) }
            notified.signal()
        }
        observer.withLock { $0 = token }
        let checks = self.checks, checked = self.checked
        coordinator.remoteCheckHook.withLock {
            $0 = { _, posted in
                checks.withLock { $0.append(posted) }
                checked.signal()
            }
        }
    }

    deinit {
        if let token = observer.withLock({ $0 }) { NotificationCenter.default.removeObserver(token) }
    }

    /// Waits until `condition` holds, checking it now and after each notification; false when
    /// it still does not hold after `seconds` (generous: only a failing test waits that long).
    func wait(seconds: Double = testGuardSeconds, until condition: () throws -> Bool) async rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if try condition() { return true }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return try condition() }
            _ = await waitOffPool(notified, seconds: left)
        }
    }

    /// Waits for the next check the coordinator makes after a wake-up; returns whether it
    /// posted a change (nil: none within `seconds`).
    func nextCheck(seconds: Double = testGuardSeconds) async -> Bool? {
        guard await waitOffPool(checked, seconds: seconds) else { return nil }
        return checks.withLock { $0.last }
    }

    /// Waits until the stream delivered `count` changes.
    func waitForStreamed(_ count: Int, seconds: Double = testGuardSeconds) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while streamed.withLock({ $0.count }) < count {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return false }
            _ = await waitOffPool(streamedOne, seconds: left)
        }
        return true
    }
}

/// A `CoherenceTestWriter` child process, its standard output read line by line.
final class WriterProcess: @unchecked Sendable {
    // @unchecked Sendable: `process` is set up in `init`, then only waited on, signalled and read.
    /// The helper's binary, built next to the test bundle (same products directory).
    static var executable: URL { executable("CoherenceTestWriter") }

    /// A helper binary built next to the test bundle.
    static func executable(_ name: String) -> URL {
        Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent(name)
    }

    let process: Process
    private let input = Pipe()
    private let output = Pipe()
    private let errors = Pipe()
    /// Lines received, and the bytes of an unfinished line.
    private let received = LockedValue<(lines: [String], partial: Data, ended: Bool)>(([], Data(), false))
    private let arrived = DispatchSemaphore(value: 0)
    private let consumed = LockedValue<Int>(0)

    /// Starts the writer (or the helper `program`) on the store at `store`; `launcher`: a
    /// command that runs it (as `ip netns exec NAME`).
    init(store: URL, author: String, _ arguments: [String], program: String = "CoherenceTestWriter", launcher: [String] = []) throws {
        let executable = Self.executable(program)
        try #require(
            FileManager.default.isExecutableFile(atPath: executable.path),
            "\(program) is not built at \(executable.path) (swift build --build-tests builds it)")
        process = Process()
        process.executableURL = launcher.first.map { URL(fileURLWithPath: $0) } ?? executable
        process.arguments =
            (launcher.isEmpty ? [] : Array(launcher.dropFirst()) + [executable.path]) + ["--store", store.path, "--author", author]
            + arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        let received = self.received, arrived = self.arrived
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            let newLines = received.withLock { r -> Int in
                if data.isEmpty {
                    r.ended = true
                    return 1
                }
                r.partial.append(data)
                var count = 0
                while let newline = r.partial.firstIndex(of: UInt8(ascii: "\n")) {
                    r.lines.append(String(decoding: r.partial[r.partial.startIndex..<newline], as: UTF8.self))
                    r.partial = Data(r.partial[(newline + 1)...])
                    count += 1
                }
                return count
            }
            if data.isEmpty { handle.readabilityHandler = nil }
            for _ in 0..<newLines { arrived.signal() }
        }
        try process.run()
    }

    /// Waits for a line equal to `expected` among those not consumed yet (consuming up to it).
    func waitForLine(_ expected: String, seconds: Double = testGuardSeconds) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let (lines, ended) = received.withLock { ($0.lines, $0.ended) }
            let from = consumed.withLock { $0 }
            if let i = lines[from...].firstIndex(of: expected) {
                consumed.withLock { $0 = i + 1 }
                return true
            }
            let left = deadline.timeIntervalSinceNow
            if ended || left <= 0 { return false }
            _ = await waitOffPool(arrived, seconds: left)
        }
    }

    /// Waits for the next line not consumed yet and consumes it (nil: none within `seconds`, or
    /// the output ended).
    func nextLine(seconds: Double = testGuardSeconds) async -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let (lines, ended) = received.withLock { ($0.lines, $0.ended) }
            let from = consumed.withLock { $0 }
            if from < lines.count {
                consumed.withLock { $0 = from + 1 }
                return lines[from]
            }
            let left = deadline.timeIntervalSinceNow
            if ended || left <= 0 { return nil }
            _ = await waitOffPool(arrived, seconds: left)
        }
    }

    /// Writes one line to the writer's standard input (its "go" under `--step`).
    func send(_ line: String = "go") {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Kills the writer with SIGKILL and waits for it to end.
    func kill() async {
        #if canImport(Glibc)
        Glibc.kill(process.processIdentifier, SIGKILL)
        #else
        Darwin.kill(process.processIdentifier, SIGKILL)
        #endif
        await onOwnThread { [process] in process.waitUntilExit() }
    }

    /// Waits for the writer to end; its exit status and what it wrote to standard error.
    func finish() async -> (status: Int32, errors: String) {
        await onOwnThread { [process, errors] in
            process.waitUntilExit()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, text)
        }
    }
}

/// The process's open inotify instances (each watcher holds one on Linux).
func inotifyDescriptors() -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == "anon_inode:inotify" }
}

/// The process's inotify descriptors that watch the file `inode` (from `/proc/self/fdinfo`,
/// which lists each watch's inode in hexadecimal): unlike a count of all inotify descriptors,
/// watchers that tests running in parallel open and close do not change it.
func inotifyDescriptorCount(watchingInode inode: UInt64) -> Int {
    let needle = "ino:" + String(inode, radix: 16) + " "
    return inotifyDescriptors().filter { fd in
        ((try? String(contentsOfFile: "/proc/self/fdinfo/" + fd, encoding: .utf8)) ?? "").contains(needle)
    }.count
}

/// The inode of the file at `path` (0 when it cannot be read).
func inode(of path: String) -> UInt64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
}
