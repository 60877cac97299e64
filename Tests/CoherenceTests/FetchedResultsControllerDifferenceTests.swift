import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// The fetched-results controller's differences checked against the results: each reported
// difference, applied to the previous snapshot as a table view applies a batch update, must
// give the next snapshot, and the snapshot must be what a fresh fetch of the request returns.
// Rounds of mixed changes (own inserts, edits and deletes, saves, merges of objects the context
// never loaded, rollbacks), with sections, a fetch limit and a fetch offset.

/// Applies `difference` to the sections of `old` as a table view applies a batch update
/// (deletes at old paths, then inserts at new paths; a move is both) and returns the IDs by
/// section. Records a problem when a change names an object not at its path.
func applyDifference(_ difference: FetchedResultsDifference, to old: FetchedResultsSnapshot, problems: inout [String]) -> [[ObjectID]] {
    var sections: [[ObjectID?]] = old.sections.map { $0.objectIDs.map { Optional($0) } }
    func oldID(_ path: IndexPath) -> ObjectID? {
        guard path.section < old.sections.count, path.item < old.sections[path.section].objectIDs.count else { return nil }
        return old.sections[path.section].objectIDs[path.item]
    }
    // Removals at old paths (set to nil, then compacted).
    for change in difference.objectChanges where change.type == .delete || change.type == .move || change.type == .update {
        guard let path = change.indexPath else {
            problems.append("\(change) has no old index path")
            continue
        }
        guard let id = oldID(path) else {
            problems.append("\(change): no object at the old path")
            continue
        }
        if id != change.objectID && !id.isTemporaryID { problems.append("\(change): the old path holds another object") }
        if change.type != .update { sections[path.section][path.item] = nil }
    }
    for s in difference.sectionChanges where s.type == .delete {
        guard s.sectionIndex < old.sections.count else {
            problems.append("\(s): no such old section")
            continue
        }
        if old.sections[s.sectionIndex].name != s.name {
            problems.append("\(s): the old section is named \(old.sections[s.sectionIndex].name)")
        }
        if sections[s.sectionIndex].contains(where: { $0 != nil }) { problems.append("\(s): objects of the deleted section stay") }
    }
    let deletedSections = difference.deletedSections
    var remaining: [[ObjectID]] = sections.enumerated().filter { !deletedSections.contains($0.offset) }.map { $0.element.compactMap { $0 } }
    for s in difference.sectionChanges.filter({ $0.type == .insert }).sorted(by: { $0.sectionIndex < $1.sectionIndex }) {
        guard s.sectionIndex <= remaining.count else {
            problems.append("\(s): beyond the sections")
            continue
        }
        remaining.insert([], at: s.sectionIndex)
    }
    let insertions = difference.objectChanges.filter { $0.type == .insert || $0.type == .move }.sorted {
        guard let a = $0.newIndexPath, let b = $1.newIndexPath else { return false }
        return (a.section, a.item) < (b.section, b.item)
    }
    for change in insertions {
        guard let path = change.newIndexPath, path.section < remaining.count, path.item <= remaining[path.section].count else {
            problems.append("\(change): new path outside the results")
            continue
        }
        remaining[path.section].insert(change.objectID, at: path.item)
    }
    return remaining
}

/// Whether `applied` (IDs by section, from a difference) is `new`, a temporary ID of an object
/// counting as its permanent one when a save gave it that.
func sameResults(_ applied: [[ObjectID]], _ new: FetchedResultsSnapshot, permanent: [ObjectID: ObjectID]) -> Bool {
    let mapped = applied.map { $0.map { permanent[$0] ?? $0 } }
    let expected = new.sections.map(\.objectIDs)
    guard mapped.map(\.count) == expected.map(\.count) else { return false }
    // A save may give the objects permanent IDs in the same round as other changes.
    return zip(mapped.joined(), expected.joined()).allSatisfy { a, b in a == b || (a.isTemporaryID && !b.isTemporaryID) }
}

/// Collects every snapshot the controller publishes.
final class SnapshotCollector: FetchedResultsControllerDelegate {
    typealias ResultType = Person
    var snapshots: [FetchedResultsSnapshot] = []
    var order: [String] = []
    func controllerWillChangeContent(_ controller: FetchedResultsController<Person>) { order.append("will") }
    func controllerDidChangeContent(_ controller: FetchedResultsController<Person>) { order.append("did") }
    func controller(_ controller: FetchedResultsController<Person>, didChangeContentWith snapshot: FetchedResultsSnapshot) {
        order.append("snapshot")
        snapshots.append(snapshot)
    }
}

@Suite struct FetchedResultsControllerDifferenceTests {
    struct Variant: Sendable, CustomStringConvertible {
        var sections: Bool
        var limit: Int
        var offset: Int
        var byScore: Bool
        var description: String { "sections \(sections) limit \(limit) offset \(offset) byScore \(byScore)" }
    }

    static let variants: [Variant] = [
        Variant(sections: true, limit: 0, offset: 0, byScore: false),
        Variant(sections: false, limit: 0, offset: 0, byScore: true),
        Variant(sections: true, limit: 7, offset: 0, byScore: false),
        Variant(sections: false, limit: 6, offset: 0, byScore: true),
        Variant(sections: true, limit: 0, offset: 3, byScore: false),
        Variant(sections: false, limit: 5, offset: 2, byScore: true)
    ]

    @Test(arguments: variants)
    func eachDifferenceTurnsThePreviousSnapshotIntoTheNext(_ variant: Variant) throws {
        let dir = try TemporaryDirectory("frc-diff-\(variant.sections)-\(variant.limit)-\(variant.offset)-\(variant.byScore)")
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "frc")
        let sort: [SortDescriptor<Person>] =
            variant.byScore
            ? [SortDescriptor(\Person.score, order: .reverse), SortDescriptor(\Person.name)] : [SortDescriptor(\Person.name)]
        // (Constants from here on: the closures below capture copies, never a variable another
        // thread's block could be touching.)
        let request = {
            var r = FetchRequest<Person>(predicate: #Predicate { $0.age < 100 }, sortBy: sort)
            r.fetchLimit = variant.limit
            r.fetchOffset = variant.offset
            return r
        }()
        var sectionPath: KeyPath<Person, String>?
        if variant.sections { sectionPath = \Person.initial }
        let controller = FetchedResultsController<Person>(
            fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: sectionPath)
        let collector = SnapshotCollector()
        var rng = SeededGenerator(seed: UInt64(variant.limit * 31 + variant.offset * 7 + (variant.sections ? 1 : 0)))
        var counter = 0
        func newName(_ rng: inout SeededGenerator) -> String {
            counter += 1
            return "\(["A", "B", "C", "D", "E"].randomElement(using: &rng)!)\(Int.random(in: 10...99, using: &rng))-\(counter)"
        }
        try context.performAndWait {
            context.automaticallyMergesChangesFromParent = true
            for _ in 0..<12 {
                let p = Person(context: context)
                p.name = newName(&rng)
                p.age = Int.random(in: 0..<150, using: &rng)
                p.score = Double(Int.random(in: 0..<5, using: &rng))
            }
            try context.save()
            try controller.performFetch()
            controller.delegate = collector
        }
        var previous = try #require(controller.snapshot)
        var permanent: [ObjectID: ObjectID] = [:]
        for round in 0..<40 {
            collector.snapshots = []
            let action = Int.random(in: 0..<10, using: &rng)
            var roundNames: [String] = []
            try context.performAndWait {
                let registered = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
                switch action {
                case 0...4:
                    // Own changes, several at once.
                    for _ in 0..<Int.random(in: 1...4, using: &rng) {
                        switch Int.random(in: 0..<5, using: &rng) {
                        case 0:
                            let p = Person(context: context)
                            p.name = newName(&rng)
                            p.age = Int.random(in: 0..<150, using: &rng)
                            roundNames.append("insert \(p.name)")
                        case 1:
                            if let p = registered.randomElement(using: &rng), !p.isDeleted {
                                roundNames.append("delete \(p.name)")
                                context.delete(p)
                            }
                        case 2:
                            if let p = registered.randomElement(using: &rng), !p.isDeleted {
                                p.name = newName(&rng)
                                roundNames.append("rename \(p.name)")
                            }
                        case 3:
                            if let p = registered.randomElement(using: &rng), !p.isDeleted {
                                p.age = Int.random(in: 0..<150, using: &rng)
                                roundNames.append("age \(p.name) \(p.age)")
                            }
                        default:
                            if let p = registered.randomElement(using: &rng), !p.isDeleted {
                                p.score = Double(Int.random(in: 0..<5, using: &rng))
                                roundNames.append("score \(p.name) \(p.score)")
                            }
                        }
                    }
                case 5:
                    roundNames.append("rollback")
                    context.rollback()
                default:
                    roundNames.append("save")
                    try context.save()
                }
            }
            if action >= 8 {
                // Another context's changes, merged: objects the context may never have loaded.
                let names = (0..<3).map { _ in newName(&rng) }
                let ages = (0..<3).map { _ in Int.random(in: 0..<150, using: &rng) }
                let pick = Int.random(in: 0..<1000, using: &rng)
                let rename = newName(&rng)
                roundNames.append("merge \(names)")
                try saveInBackground(coordinator) { c in
                    for (n, a) in zip(names, ages) {
                        let p = Person(context: c)
                        p.name = n
                        p.age = a
                    }
                    let all = try c.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
                    if !all.isEmpty {
                        let p = all[pick % all.count]
                        p.age = p.age < 100 ? 120 : 5
                        c.delete(all[(pick / 7) % all.count])
                        all[(pick / 3) % all.count].name = rename
                    }
                }
                context.performAndWait {}
            }
            let (snapshot, fresh) = try context.performAndWait { () throws in
                (try #require(controller.snapshot), try context.fetch(request).map(\.objectID))
            }
            #expect(snapshot.objectIDs == fresh, "round \(round) \(variant) \(roundNames) \(previous.objectIDs)")
            for s in collector.snapshots {
                var problems: [String] = []
                let applied = applyDifference(s.difference, to: previous, problems: &problems)
                #expect(problems.isEmpty, "round \(round) \(variant) \(roundNames): \(problems)")
                if s.difference.isEmpty {
                    // A save's new permanent IDs: same places.
                    for (a, b) in zip(previous.objectIDs, s.objectIDs) where a != b && a.isTemporaryID { permanent[a] = b }
                }
                #expect(
                    sameResults(applied, s, permanent: permanent),
                    "round \(round) \(variant) \(roundNames): \(s.difference.objectChanges) \(s.difference.sectionChanges)")
                #expect(
                    s.sections.map(\.name) == (variant.sections ? s.sections.map { String($0.name.prefix(1)) } : s.sections.map(\.name)))
                previous = s
            }
            // Delegate order: will, did, then the snapshot; a snapshot with only new IDs alone.
            let expectedOrder = collector.snapshots.flatMap { $0.difference.isEmpty ? ["snapshot"] : ["will", "did", "snapshot"] }
            #expect(collector.order == expectedOrder, "round \(round)")
            collector.order = []
            previous = snapshot
        }
    }
}

@Suite struct FetchedResultsControllerLimitTests {
    /// With a fetch limit, an object that moves past the last row must make room for the first
    /// object beyond the limit, which the controller never loaded.
    @Test func anObjectMovingPastTheLimitLetsTheNextOneIn() throws {
        let f = try ControllerFixture(limit: 3)
        #expect(f.layout() == ":Ann,Bob,Cid")
        let ann = try f.person("Ann")
        f.context.performAndWait { ann.name = "Zed" }
        #expect(f.layout() == ":Bob,Cid,Dan")
        #expect(try f.freshNames() == ["Bob", "Cid", "Dan"])
    }
}

@Suite struct FetchedResultsControllerSpecialValueTests {
    /// Sort values the store keeps in a special form (NaN, −0.0, infinities): the controller
    /// places changed objects where a fetch puts them.
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func specialDoublesSortAsAFetchSortsThem(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("frc-special-\(type)")
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(type, in: dir))
        let request = FetchRequest<Person>(sortBy: [SortDescriptor(\.score), SortDescriptor(\.name)])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        let values: [Double] = [1, -1, .nan, -0.0, 0.0, .infinity, -.infinity, 2.5]
        try context.performAndWait { () throws in
            for (i, v) in values.enumerated() {
                let p = Person(context: context)
                p.name = "P\(i)"
                p.score = v
            }
            try context.save()
            try controller.performFetch()
        }
        for round in 0..<values.count {
            let (shown, fresh) = try context.performAndWait { () throws in
                let people = controller.fetchedObjects
                people[round].score = values[(round * 3 + 1) % values.count]
                context.processPendingChanges()
                let shown = controller.fetchedObjects.map(\.name)
                try context.save()
                return (shown, try context.fetch(request).map(\.name))
            }
            #expect(shown == fresh, "round \(round)")
        }
    }
}

@Suite struct FetchedResultsControllerBatchTests {
    /// Batch requests' results merged into the controller's context: the objects they inserted,
    /// changed and deleted (most never loaded there) are reported, and each difference applies.
    @Test(arguments: [0, 5])
    func batchResultsMergedIntoTheContextAreReported(_ limit: Int) throws {
        let dir = try TemporaryDirectory("frc-batch-\(limit)")
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "frc")
        let request = FetchRequest<Person>(predicate: #Predicate { $0.age < 100 }, sortBy: [SortDescriptor(\.name)], fetchLimit: limit)
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: \Person.initial)
        let collector = SnapshotCollector()
        try context.performAndWait { () throws in
            for i in 0..<40 {
                let p = Person(context: context)
                p.name = "\(["A", "B", "C", "D"][i % 4])\(String(format: "%02d", i))"
                p.age = i % 3 == 0 ? 150 : i
            }
            try context.save()
            try controller.performFetch()
            controller.delegate = collector
        }
        var previous = try #require(controller.snapshot)
        func check(_ label: String) throws {
            let fresh = try context.performAndWait { () throws in try context.fetch(request).map(\.objectID) }
            let snapshot = try #require(controller.snapshot)
            #expect(snapshot.objectIDs == fresh, "\(label)")
            for s in collector.snapshots {
                var problems: [String] = []
                let applied = applyDifference(s.difference, to: previous, problems: &problems)
                #expect(problems.isEmpty, "\(label): \(problems)")
                #expect(sameResults(applied, s, permanent: [:]), "\(label)")
                previous = s
            }
            collector.snapshots = []
        }
        var update = BatchUpdateRequest<Person>(predicate: #Predicate { $0.age >= 100 }, propertiesToUpdate: ["age": 7])
        update.resultType = .objectIDs
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: try coordinator.execute(update).changes, into: [context])
        try check("batch update")
        var hide = BatchUpdateRequest<Person>(predicate: #Predicate { $0.name < "B" }, propertiesToUpdate: ["age": 120])
        hide.resultType = .objectIDs
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: try coordinator.execute(hide).changes, into: [context])
        try check("batch update out")
        var delete = BatchDeleteRequest(fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.name < "C" }))
        delete.resultType = .objectIDs
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: try coordinator.execute(delete).changes, into: [context])
        try check("batch delete")
        var insert = BatchInsertRequest<Person>(objects: (0..<30).map { ["name": "A\(String(format: "%03d", $0))", "age": $0 * 5] })
        insert.resultType = .objectIDs
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: try coordinator.execute(insert).changes, into: [context])
        try check("batch insert")
        #expect(try context.performAndWait { () throws in try context.fetch(request).count } == (limit == 0 ? 40 : limit))
    }
}

@Suite struct FetchedResultsControllerRefetchTests {
    /// A new request and `performFetch()`: the streams get the difference (which applies), the
    /// delegate is not called; a stream ends when the controller goes away.
    @Test func aNewRequestIsADifferenceOnTheStreamsOnly() async throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        let c = FetchedResultsController(
            fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.age < 3 }, sortBy: [SortDescriptor(\.name)]),
            managedObjectContext: context, sectionNameKeyPath: \Person.initial)
        let collector = SnapshotCollector()
        try context.performAndWait { () throws in
            for (i, n) in ["Ann", "Abe", "Bob", "Cid", "Dan", "Eve"].enumerated() {
                let p = Person(context: context)
                p.name = n
                p.age = i
            }
            try context.save()
            try c.performFetch()
            c.delegate = collector
        }
        var iterator = c.snapshots.makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(first.sections.map(\.name) == ["A", "B"])
        try context.performAndWait { () throws in
            c.fetchRequest = FetchRequest<Person>(predicate: #Predicate { $0.age >= 2 }, sortBy: [SortDescriptor(\.name)])
            try c.performFetch()
        }
        let second = try #require(await iterator.next())
        #expect(collector.order.isEmpty)
        var problems: [String] = []
        let applied = applyDifference(second.difference, to: first, problems: &problems)
        #expect(problems.isEmpty, "\(problems)")
        #expect(sameResults(applied, second, permanent: [:]))
        #expect(second.sections.map(\.name) == ["B", "C", "D", "E"])
        #expect(second.numberOfObjects == 4)
    }

    /// A snapshots stream ends when its controller goes away.
    @Test func aStreamEndsWithItsController() async throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        func makeStream() throws -> AsyncStream<FetchedResultsSnapshot> {
            let controller = FetchedResultsController(
                fetchRequest: FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]), managedObjectContext: context)
            try context.performAndWait { () throws in try controller.performFetch() }
            return controller.snapshots
        }
        var iterator = try makeStream().makeAsyncIterator()
        #expect(await iterator.next()?.numberOfObjects == 0)
        #expect(await iterator.next() == nil)
    }
}

@Suite struct FetchedResultsControllerOptionalSectionTests {
    /// Sections from an optional string: nil is the section "", first in ascending order as nil
    /// sorts first; objects moving between nil and values change sections.
    @Test func nilIsTheEmptySectionAndObjectsMoveInAndOut() throws {
        let dir = try TemporaryDirectory()
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(.sqlite, in: dir))
        let request = FetchRequest<Person>(sortBy: [SortDescriptor(\.email), SortDescriptor(\.name)])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: \Person.email)
        let collector = SnapshotCollector()
        let emails: [String?] = [nil, "a", "b", nil, "a"]
        try context.performAndWait { () throws in
            for (i, e) in emails.enumerated() {
                let p = Person(context: context)
                p.name = "P\(i)"
                p.email = e
            }
            try context.save()
            try controller.performFetch()
            controller.delegate = collector
        }
        #expect(controller.snapshot?.sections.map(\.name) == ["", "a", "b"])
        var previous = try #require(controller.snapshot)
        let steps: [(Int, String?)] = [(0, "c"), (3, "b"), (1, nil), (2, nil), (4, "c")]
        for (index, email) in steps {
            let fresh = try context.performAndWait { () throws in
                let p = try #require(try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "P\(index)" })).first)
                p.email = email
                context.processPendingChanges()
                return try context.fetch(request).map(\.objectID)
            }
            let snapshot = try #require(controller.snapshot)
            #expect(snapshot.objectIDs == fresh)
            var problems: [String] = []
            let applied = applyDifference(snapshot.difference, to: previous, problems: &problems)
            #expect(problems.isEmpty, "\(problems)")
            #expect(sameResults(applied, snapshot, permanent: [:]))
            previous = snapshot
        }
        #expect(controller.snapshot?.sections.map(\.name) == ["", "b", "c"])
    }
}
