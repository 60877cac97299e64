import Coherence
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// R1: remote-change latency from a commit in process A (a child: this executable with
// --r1-child) to the notification in process B (this process), each commit asked for as soon as
// the one before was heard (B's watcher then gathers commits in quiet periods); R1P: the same
// with 10 ms between commits (each wakes B at once). R2: what announcing commits costs the
// writer (single-object saves with the option on, against the same saves with it off).

/// Nanoseconds of the system-wide monotonic clock (the same clock in every process).
func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Lines from a file handle, read as they arrive (blocking).
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()
    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, or nil at the end of the stream.
    func next() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer = Data(buffer[(newline + 1)...])
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }
}

/// The times (monotonic clock) at which a notification was posted, and a semaphore signalled
/// each time.
final class Arrivals: @unchecked Sendable {
    // @unchecked Sendable: `times` is only used under `lock`; `observer` is set once, in init.
    private let lock = NSLock()
    private var times: [UInt64] = []
    let arrived = DispatchSemaphore(value: 0)
    private var observer: (any NSObjectProtocol)?

    init(of name: Notification.Name, from object: AnyObject) {
        observer = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { [weak self] _ in
            self?.note(monotonicNanoseconds())
        }
    }

    private func note(_ time: UInt64) {
        lock.withLock { times.append(time) }
        arrived.signal()
    }

    /// The latest time noted, removed.
    func popLast() -> UInt64? { lock.withLock { times.popLast() } }

    deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }
}

extension Workloads {
    /// The options of a store whose commits other coordinators hear.
    static let remoteOptions = StoreOptions(remoteChangeNotificationPost: true)

    // MARK: R1 remote-change latency between two processes

    /// Process A: one save per line read from standard input (by `author`, when given), each
    /// reported as `T <start ns> <end ns>` (monotonic clock) once `save()` returned.
    static func r1Child(store path: String, options: StoreOptions = remoteOptions, author: String? = nil) throws {
        let c = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
        try c.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: path), options: options)
        let context = backgroundContext(c)
        context.transactionAuthor = author
        let out = FileHandle.standardOutput
        out.write(Data("READY\n".utf8))
        var i = 0
        while readLine() != nil {
            i += 1
            let n = i
            let start = monotonicNanoseconds()
            try context.performAndWait {
                insertPerson(n, of: 1_000_000, into: context)
                try context.save()
            }
            let end = monotonicNanoseconds()
            out.write(Data("T \(start) \(end)\n".utf8))
        }
    }

    static func r1(_ o: Options, pause: Double = 0) throws -> WorkloadResult {
        let commits = o.n(200)
        var result = WorkloadResult(
            name: pause > 0 ? "R1P" : "R1",
            title: "remote-change latency, \(commits) commits" + (pause > 0 ? ", \(Int(pause * 1000)) ms apart" : ""))
        try withTemporaryDirectory { dir in
            let url = dir.appendingPathComponent("r1.sqlite")
            let listener = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
            try listener.addPersistentStore(type: .sqlite, at: url, options: remoteOptions)
            let arrivals = Arrivals(of: .persistentStoreRemoteChange, from: listener)
            guard let run = try latencies(child: ["--r1-child", url.path], commits: commits, pause: pause, arrivals: arrivals)
            else {
                result.note = "the writer process did not start"
                return
            }
            let (latencies, saves, missed) = run

            // What the listener costs while nothing happens: its CPU time over 2 s of quiet.
            let idleBefore = cpuSeconds()
            Thread.sleep(forTimeInterval: 2)
            let idleCPU = cpuSeconds() - idleBefore

            result.times["coherence"] = latencies
            let percentile = percentiles(latencies)
            let savesSorted = saves.sorted()
            let saveMedian = savesSorted.isEmpty ? 0 : savesSorted[savesSorted.count / 2]
            result.note = String(
                format: "from the start of A's save to B's notification: p50 %.2f ms, p99 %.2f ms, max %.2f ms"
                    + " (targets ≤ 20 / ≤ 100 ms); A's save %.2f ms; missed %d; B idle CPU %.1f ms over 2 s",
                percentile(0.5) * 1000, percentile(0.99) * 1000, percentile(1) * 1000, saveMedian * 1000, missed,
                idleCPU * 1000)
        }
        return result
    }

    /// Runs this executable again as process A with `arguments` (a writer like ``r1Child(store:options:author:)``)
    /// and asks it for `commits` commits, one at a time (each once the one before was heard,
    /// `pause` seconds later): the seconds from the start of each save to its arrival (a
    /// notification `arrivals` noted), each save's seconds, and how
    /// many were not heard within 10 s. Nil when the child did not start.
    static func latencies(child arguments: [String], commits: Int, pause: Double, arrivals: Arrivals) throws -> (
        latencies: [Double], saves: [Double], missed: Int
    )? {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = arguments
        let input = Pipe(), output = Pipe()
        child.standardInput = input
        child.standardOutput = output
        try child.run()
        let lines = LineReader(output.fileHandleForReading)
        guard lines.next() == "READY" else { return nil }
        var latencies: [Double] = []
        var saves: [Double] = []
        var missed = 0
        for _ in 0..<commits {
            // One commit at a time: the next is asked for once this one was heard.
            if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            input.fileHandleForWriting.write(Data("go\n".utf8))
            let heard = arrivals.arrived.wait(timeout: .now() + 10) == .success
            guard let line = lines.next() else { break }
            let parts = line.split(separator: " ")
            guard parts.count == 3, let start = UInt64(parts[1]), let end = UInt64(parts[2]) else { break }
            saves.append(Double(end - start) / 1e9)
            guard heard, let at = arrivals.popLast() else {
                missed += 1
                continue
            }
            latencies.append(Double(at &- start) / 1e9)
        }
        try input.fileHandleForWriting.close()
        child.waitUntilExit()
        return (latencies, saves, missed)
    }

    /// The `p`-th quantile of `values` (0 < p ≤ 1; 0 when empty), as a function of p.
    static func percentiles(_ values: [Double]) -> (Double) -> Double {
        let sorted = values.sorted()
        return { p in sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] }
    }

    /// User + system CPU seconds of this process.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        #else
        getrusage(RUSAGE_SELF, &usage)
        #endif
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    // MARK: R2 the writer's cost of announcing its commits

    static func r2(_ o: Options) throws -> WorkloadResult {
        let n = o.n(2_000)
        // Wall times, by implementation (the table shows CPU times: on a shared machine they
        // move far less than wall times).
        let walls = Mutex<[String: [Double]]>([:])
        func singles(_ label: String, _ options: StoreOptions) -> (String, Run) {
            (
                label,
                {
                    try withTemporaryDirectory { dir in
                        let c = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
                        try c.addPersistentStore(type: .sqlite, at: dir.appendingPathComponent("r2.sqlite"), options: options)
                        let context = backgroundContext(c)
                        let cpu = cpuSeconds()
                        let wall = try measure {
                            try context.performAndWait {
                                for i in 0..<n {
                                    insertPerson(i, of: n, into: context)
                                    try context.save()
                                }
                            }
                        }
                        let used = cpuSeconds() - cpu
                        walls.withLock { $0[label, default: []].append(wall) }
                        return used
                    }
                }
            )
        }
        var result = try interleave(
            "R2", "\(n) single saves, remote changes on (CPU)", reps: o.repetitions,
            [singles("coherence", remoteOptions), singles("baseline", StoreOptions())])
        let wall = walls.withLock { w in
            ["coherence", "baseline"].map { label -> Double in
                let t = (w[label] ?? []).sorted()
                return t.isEmpty ? 0 : t[t.count / 2]
            }
        }
        result.note = String(
            format: "CPU time of the process (every thread, the watcher's too); wall medians %.1f / %.1f ms; "
                + "baseline: the same saves with remoteChangeNotificationPost off",
            wall[0] * 1000, wall[1] * 1000)
        return result
    }
}
