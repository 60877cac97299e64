import BenchmarkSupport
import Coherence
import Foundation
import Synchronization

// K1: latency from a commit in process A (a child: this executable with --k1-child, author
// "extension") to the object being in process B's view context, merged there by B's
// PersistentHistoryTrackingKit (B's "view context" is a private-queue context: this process's main
// thread runs the benchmark, not a main queue). K2: a kit merging 10,000 transactions of 10
// inserts each, written by another author. K3: the manual cleaner deleting 100,000 transactions.

extension Workloads {
    /// History and remote changes on: what the kits need.
    static let kitOptions = StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true)

    // MARK: K1 commit in A → visible in B's view context

    static func k1(_ o: Options) throws -> WorkloadResult {
        let commits = o.n(200)
        var result = WorkloadResult(name: "K1", title: "kit: commit in A → in B's view context, \(commits) commits")
        try withTemporaryDirectory { dir in
            let url = dir.appendingPathComponent("k1.sqlite")
            let b = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
            try b.addPersistentStore(type: .sqlite, at: url, options: kitOptions)
            let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: b, name: "view")
            view.transactionAuthor = "app"
            let kit = PersistentHistoryTrackingKit(viewContext: view, currentAuthor: "app", allAuthors: ["app", "extension"], logLevel: 0)
            defer { kit.stop() }
            // Posted on the view context's queue once the kit merged the commit into it.
            let arrivals = Arrivals(of: ManagedObjectContext.objectsDidChangeNotification, from: view)
            guard let run = try childLatencies(child: ["--k1-child", url.path], commits: commits, pause: 0, arrivals: arrivals)
            else {
                result.note = "the writer process did not start"
                return
            }
            let (latencies, missed) = (run.fromStart, run.missed)
            result.times["coherence"] = latencies
            let percentile = percentiles(latencies)
            result.note = String(
                format: "from the start of A's save to the merge in B's view context: p50 %.2f ms, p99 %.2f ms, max %.2f ms"
                    + " (targets ≤ 30 / ≤ 150 ms); missed %d",
                percentile(0.5) * 1000, percentile(0.99) * 1000, percentile(1) * 1000, missed)
        }
        return result
    }

    // MARK: K2 merging 10,000 transactions of 10 changes

    static func k2(_ o: Options) async throws -> WorkloadResult {
        let transactions = o.n(10_000)
        var result = WorkloadResult(name: "K2", title: "kit: merge \(transactions) transactions of 10 inserts")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("k2.sqlite")
        let writer = try coherenceStore(url, options: kitOptions)
        let context = backgroundContext(writer)
        context.transactionAuthor = "importer"
        try context.performAndWait {
            for t in 0..<transactions {
                for k in 0..<10 { insertPerson(t * 10 + k, of: transactions * 10, into: context) }
                try context.save()
            }
        }
        var times: [Double] = []
        for rep in 0..<o.repetitions {
            // A new author each time: it has merged nothing yet.
            let reader = try coherenceStore(url, options: kitOptions)
            let view = backgroundContext(reader)
            let author = "app\(rep)"
            let kit = PersistentHistoryTrackingKit(
                viewContext: view, currentAuthor: author, allAuthors: [author, "importer"], cleanStrategy: .none, logLevel: 0)
            let start = monotonicNanoseconds()
            let merged = await kit.mergePendingHistory()
            times.append(Double(monotonicNanoseconds() - start) / 1e9)
            kit.stop()
            if merged != transactions { result.note = "merged \(merged) of \(transactions)" }
        }
        result.times["coherence"] = times
        if result.note.isEmpty {
            result.note = "fetch (with changes), merge into a view context holding no objects, record progress"
        }
        return result
    }

    // MARK: K3 cleaning 100,000 transactions

    static func k3(_ o: Options) async throws -> WorkloadResult {
        let transactions = o.n(100_000)
        var result = WorkloadResult(name: "K3", title: "kit: clean \(transactions) transactions")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let template = dir.appendingPathComponent("template.sqlite")
        let history = StoreOptions(persistentHistoryTracking: true)
        do {
            // One object per transaction; then the app's kit merges them all (its progress).
            let writer = try coherenceStore(template, options: history)
            let context = backgroundContext(writer)
            context.transactionAuthor = "importer"
            try context.performAndWait {
                for t in 0..<transactions {
                    insertPerson(t, of: transactions, into: context)
                    try context.save()
                }
            }
            let view = backgroundContext(writer)
            let kit = PersistentHistoryTrackingKit(
                viewContext: view, currentAuthor: "app", allAuthors: ["app", "importer"], cleanStrategy: .none, logLevel: 0)
            await kit.mergePendingHistory()
            kit.stop()
            for store in writer.persistentStores { try writer.remove(store) }
        }
        var times: [Double] = []
        for rep in 0..<o.repetitions {
            let copy = dir.appendingPathComponent("k3-\(rep).sqlite")
            try FileManager.default.copyItem(at: template, to: copy)
            let c = try coherenceStore(copy, options: history)
            let kit = PersistentHistoryTrackingKit(
                viewContext: backgroundContext(c), currentAuthor: "app", allAuthors: ["app", "importer"], cleanStrategy: .none,
                logLevel: 0, autoStart: false)
            let cleaner = kit.cleanerBuilder()
            let start = monotonicNanoseconds()
            let deleted = cleaner()
            times.append(Double(monotonicNanoseconds() - start) / 1e9)
            if deleted != transactions - 1 { result.note = "deleted \(deleted) of \(transactions - 1)" }
        }
        result.times["coherence"] = times
        if result.note.isEmpty { result.note = "the manual cleaner, every author having merged everything: one history delete" }
        return result
    }
}
