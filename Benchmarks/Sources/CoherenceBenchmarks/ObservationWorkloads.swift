import Coherence
import Foundation
import Synchronization

// F1: a fetched-results controller's diff. A view context (merging automatically) shows 10,000
// people in a controller sorted by score; a background context saves 1,000 changes (600 scores
// moved, 200 deletes, 200 inserts the view context never loaded). Measured: from the view
// context's ObjectsDidChange for the merge to the end of the controller's report (its
// delegate's snapshot call) — the controller's own work, the inserted rows' reads included.

/// Start and end stamps, set on the view context's queue and read after it.
final class Stamps: Sendable {
    let value = Mutex<(start: UInt64, end: UInt64)>((0, 0))
    func start() { value.withLock { $0.start = DispatchTime.now().uptimeNanoseconds } }
    func end() { value.withLock { $0.end = DispatchTime.now().uptimeNanoseconds } }
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
        result.note = "view context's ObjectsDidChange → controller's report"
        try withTemporaryDirectory { dir in
            let c = try coherenceStore(dir.appendingPathComponent("f1.sqlite"))
            try fillCoherence(c, n: n)
            let view = backgroundContext(c)
            view.automaticallyMergesChangesFromParent = true
            let stamps = Stamps()
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
