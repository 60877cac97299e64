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

extension Workloads {
    /// The options of a store whose commits other coordinators hear.
    static let remoteOptions = StoreOptions(remoteChangeNotificationPost: true)

    // MARK: R1 remote-change latency between two processes

    /// Process A: one save per line read from standard input, each reported as
    /// `T <start ns> <end ns>` (monotonic clock) once `save()` returned.
    static func r1Child(store path: String) throws {
        let c = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
        try c.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: path), options: remoteOptions)
        let context = backgroundContext(c)
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
            let arrivals = Mutex<[UInt64]>([])
            let arrived = DispatchSemaphore(value: 0)
            let observer = NotificationCenter.default.addObserver(
                forName: .persistentStoreRemoteChange, object: listener, queue: nil
            ) { _ in
                let now = monotonicNanoseconds()
                arrivals.withLock { $0.append(now) }
                arrived.signal()
            }
            defer { NotificationCenter.default.removeObserver(observer) }

            let child = Process()
            child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            child.arguments = ["--r1-child", url.path]
            let input = Pipe(), output = Pipe()
            child.standardInput = input
            child.standardOutput = output
            try child.run()
            let lines = LineReader(output.fileHandleForReading)
            guard lines.next() == "READY" else {
                result.note = "the writer process did not start"
                return
            }
            var latencies: [Double] = []
            var saves: [Double] = []
            var missed = 0
            for _ in 0..<commits {
                // One commit at a time: the next is asked for once this one was heard.
                if pause > 0 { Thread.sleep(forTimeInterval: pause) }
                input.fileHandleForWriting.write(Data("go\n".utf8))
                let heard = arrived.wait(timeout: .now() + 10) == .success
                guard let line = lines.next() else { break }
                let parts = line.split(separator: " ")
                guard parts.count == 3, let start = UInt64(parts[1]), let end = UInt64(parts[2]) else { break }
                saves.append(Double(end - start) / 1e9)
                guard heard, let at = arrivals.withLock({ $0.popLast() }) else {
                    missed += 1
                    continue
                }
                latencies.append(Double(at &- start) / 1e9)
            }
            try input.fileHandleForWriting.close()
            child.waitUntilExit()

            // What the listener costs while nothing happens: its CPU time over 2 s of quiet.
            let idleBefore = cpuSeconds()
            Thread.sleep(forTimeInterval: 2)
            let idleCPU = cpuSeconds() - idleBefore

            result.times["coherence"] = latencies
            let sorted = latencies.sorted()
            func percentile(_ p: Double) -> Double {
                sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
            }
            let savesSorted = saves.sorted()
            let saveMedian = savesSorted.isEmpty ? 0 : savesSorted[savesSorted.count / 2]
            result.note = String(
                format: "from the start of A's save to B's notification: p50 %.2f ms, p99 %.2f ms, max %.2f ms"
                    + " (targets ≤ 20 / ≤ 100 ms); A's save %.2f ms; missed %d; B idle CPU %.1f ms over 2 s",
                percentile(0.5) * 1000, percentile(0.99) * 1000, (sorted.last ?? 0) * 1000, saveMedian * 1000, missed,
                idleCPU * 1000)
        }
        return result
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
