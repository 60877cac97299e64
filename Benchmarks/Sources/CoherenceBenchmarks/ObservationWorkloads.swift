import BenchmarkSupport
import Coherence
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// F1: a fetched-results controller's diff. A view context (merging automatically) shows 10,000
// people in a controller sorted by score; a background context saves 1,000 changes (600 scores
// moved, 200 deletes, 200 inserts the view context never loaded). Measured: from the view
// context's ObjectsDidChange for the merge to the end of the controller's report (its
// delegate's snapshot call) — the controller's own work, the inserted rows' reads included —
// as the CPU time of the view context's thread (both stamps are taken there), so that other
// work on the machine does not count.

/// Start and end stamps: wall-clock time, or (`threadCPU`) the CPU time of the thread that
/// takes both stamps.
final class Stamps: Sendable {
    let threadCPU: Bool
    let value = Mutex<(start: UInt64, end: UInt64)>((0, 0))
    init(threadCPU: Bool = false) { self.threadCPU = threadCPU }
    private func now() -> UInt64 {
        guard threadCPU else { return DispatchTime.now().uptimeNanoseconds }
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
    func start() {
        let t = now()
        value.withLock { $0.start = t }
    }
    func end() {
        let t = now()
        value.withLock { $0.end = t }
    }
    var seconds: Double { value.withLock { Double($0.end &- $0.start) / 1e9 } }
}

/// Stamps the end of each controller report.
final class StampingDelegate: FetchedResultsControllerDelegate {
    let stamps: Stamps
    var reports = 0
    var lastDifference = FetchedResultsDifference()
    init(_ stamps: Stamps) { self.stamps = stamps }
    func controller(_ controller: FetchedResultsController<BPerson>, didChangeContentWith snapshot: FetchedResultsSnapshot) {
        stamps.end()
        reports += 1
        lastDifference = snapshot.difference
    }
}

extension Workloads {
    static func f1(_ o: Options) throws -> WorkloadResult {
        let n = o.n(10_000), k = o.n(1_000)
        var result = WorkloadResult(name: "F1", title: "controller diff: \(n) rows, merge of \(k)")
        result.note = "view context's ObjectsDidChange → controller's report, thread CPU time"
        try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("f1.sqlite"))
            try fillCoherence(c, n: n)
            let view = backgroundContext(c)
            view.automaticallyMergesChangesFromParent = true
            let stamps = Stamps(threadCPU: true)
            // Registered before the controller's observer, so it runs first.
            let observer = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.objectsDidChangeNotification, object: view, queue: nil
            ) { _ in stamps.start() }
            defer { NotificationCenter.default.removeObserver(observer) }
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<BPerson>(sortBy: [SortDescriptor(\.score)]), managedObjectContext: view)
            let delegate = StampingDelegate(stamps)
            try view.performAndWait {
                try controller.performFetch()
                controller.delegate = delegate
            }
            var nextID = n
            for rep in 0..<o.repetitions {
                let moves = k * 6 / 10, deletes = k / 5, inserts = k - moves - deletes
                let background = backgroundContext(c)
                let first = nextID
                try background.performAndWait {
                    let people = try background.fetch(FetchRequest<BPerson>(sortBy: [SortDescriptor(\.id)], fetchLimit: moves + deletes))
                    for (i, p) in people.enumerated() {
                        if i < moves {
                            p.score = Double((i * 7919 + rep * 31) % n) + 0.25  // somewhere else in the order
                        } else {
                            background.delete(p)
                        }
                    }
                    for j in 0..<inserts { insertPerson(first + j, of: n, into: background) }
                    try background.save()
                }
                nextID += inserts
                let reports = delegate.reports
                view.performAndWait {}  // the merge (queued by the save) and the report ran
                if delegate.reports != reports + 1 { result.note += " (no report!)" }
                result.times["coherence", default: []].append(stamps.seconds)
            }
            let d = delegate.lastDifference
            result.note +=
                "; last: +\(d.insertedIndexPaths.count) -\(d.deletedIndexPaths.count) moved \(d.movedIndexPaths.count) updated \(d.updatedIndexPaths.count)"
        }
        return result
    }
}

// D1: a dual-coordinator container's propagation (W8's question for it): from the start of a
// 10,000-object importer save to the report of a fetched-results controller on the view context
// (the save, the merge on the main queue and the controller's work). D2: the view context's own
// queue time for a 100,000-object import while it holds 10 objects: from the importer's DidSave
// notification to the end of the view context's merge (its ObjectsDidChange).

extension Workloads {
    static func d1(_ o: Options) async throws -> WorkloadResult {
        let k = o.n(10_000)
        var result = WorkloadResult(name: "D1", title: "dual: importer saves \(k), view + controller")
        result.note = "importer save → controller on the view context reports"
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let container = try DualCoordinatorContainer(managedObjectModel: benchmarkModel, storeURL: dir.appendingPathComponent("d1.sqlite"))
        let view = container.viewContext
        let stamps = Stamps()
        let controller = FetchedResultsController(
            fetchRequest: FetchRequest<BPerson>(predicate: #Predicate { $0.age < 10 }, sortBy: [SortDescriptor(\.id)]),
            managedObjectContext: view)
        let delegate = StampingDelegate(stamps)
        try await view.perform {
            try controller.performFetch()
            controller.delegate = delegate
        }
        for rep in 0..<o.repetitions {
            let importer = container.importerContext()
            stamps.start()
            try await importer.perform {
                for i in 0..<k { insertPerson(rep * k + i, of: k, into: importer) }
                try importer.save()
            }
            let shown = await view.perform(schedule: .enqueued) { controller.fetchedObjects.count }
            if shown != (rep + 1) * k / 8 { result.note += " (controller shows \(shown)!)" }
            result.times["coherence", default: []].append(stamps.seconds)
        }
        return result
    }

    static func d2(_ o: Options) async throws -> WorkloadResult {
        let k = o.n(100_000)
        var result = WorkloadResult(name: "D2", title: "dual: view holds 10 during import of \(k)")
        result.note = "the view context's merge of the import, main thread CPU time"
        for _ in 0..<o.repetitions {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-bench-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: dir) }
            let container = try DualCoordinatorContainer(
                managedObjectModel: benchmarkModel, storeURL: dir.appendingPathComponent("d2.sqlite"))
            try fillCoherence(container.writerCoordinator, n: 10)
            let view = container.viewContext
            let held = try await view.perform { try view.fetch(FetchRequest<BPerson>()).map { $0.score } }
            if held.count != 10 { result.note += " (holds \(held.count)!)" }
            let stamps = Stamps(threadCPU: true)
            // The main queue is held until the import is saved, then stamps the start: the merge
            // the save queued runs next on the same thread, and its ObjectsDidChange stamps the end.
            let gate = DispatchSemaphore(value: 0)
            DispatchQueue.main.async {
                gate.wait()
                stamps.start()
            }
            let merged = NotificationCenter.default.addObserver(
                forName: ManagedObjectContext.objectsDidChangeNotification, object: view, queue: nil
            ) { _ in stamps.end() }
            let importer = container.importerContext()
            try await importer.perform {
                for i in 10..<(10 + k) { insertPerson(i, of: k, into: importer) }
                try importer.save()
            }
            gate.signal()
            let registered = await view.perform(schedule: .enqueued) { view.registeredObjects.count }
            NotificationCenter.default.removeObserver(merged)
            if registered != 10 { result.note += " (registered \(registered)!)" }
            result.times["coherence", default: []].append(stamps.seconds)
        }
        return result
    }
}
