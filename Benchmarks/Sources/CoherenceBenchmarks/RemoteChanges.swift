import BenchmarkSupport
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

extension Workloads {
    /// The options of a store whose commits other coordinators hear.
    static let remoteOptions = StoreOptions(remoteChangeNotificationPost: true)

    // MARK: R1 remote-change latency between two processes

    /// Process A: a writer on the SQLite store at `path` (see ``writerChild(_:author:)``).
    static func r1Child(store path: String, options: StoreOptions = remoteOptions, author: String? = nil) throws {
        let c = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
        try c.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: path), options: options)
        try writerChild(c, author: author)
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
            guard let run = try childLatencies(child: ["--r1-child", url.path], commits: commits, pause: pause, arrivals: arrivals)
            else {
                result.note = "the writer process did not start"
                return
            }
            let (latencies, saves, missed) = (run.fromStart, run.saves, run.missed)

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
