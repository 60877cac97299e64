import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Probes of stores removed and attached again under use, and of coordinators with every
/// listener attached going away.
@Suite("Stores: lifecycle probes", .timeLimit(.minutes(3)))
struct StoreLifecycleProbeTests {
    static func model() throws -> ManagedObjectModel { try ManagedObjectModel(types: [Town.self, Person.self, Club.self]) }

    /// The populations of the towns in the file at `url`, read by a coordinator of its own.
    static func populations(at url: URL) throws -> [String: Int] {
        let c = PersistentStoreCoordinator(managedObjectModel: try model())
        try c.addPersistentStore(type: .sqlite, at: url)
        let ctx = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        return try ctx.performAndWait {
            Dictionary(uniqueKeysWithValues: try ctx.fetch(FetchRequest<Town>()).map { ($0.name, $0.population) })
        }
    }

    /// A save touching objects of a removed store and of an attached one writes nothing, keeps
    /// the changes, and saves whole once the file is attached again.
    @Test func aSaveSpanningARemovedStoreWritesNothingUntilItIsBack() throws {
        let dir = try TemporaryDirectory()
        let urlA = dir.file("a.sqlite"), urlB = dir.file("b.sqlite")
        let c = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        let a = try c.addPersistentStore(type: .sqlite, at: urlA)
        let b = try c.addPersistentStore(type: .sqlite, at: urlB)
        let ctx = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try ctx.performAndWait {
            let ta = Town(context: ctx)
            ta.name = "A"
            try ctx.assign(ta, to: a)
            let tb = Town(context: ctx)
            tb.name = "B"
            try ctx.assign(tb, to: b)
            try ctx.save()
        }
        try c.remove(a)
        let failure: CoherenceError? = ctx.performAndWait {
            for t in ctx.registeredObjects.compactMap({ $0 as? Town }) { t.population += 10 }
            let extra = Town(context: ctx)
            extra.name = "C"
            do { try ctx.save(); return nil } catch let e as CoherenceError { return e } catch { return nil }
        }
        #expect(failure?.code == .storeNotAttached)
        #expect(try Self.populations(at: urlB) == ["B": 0])
        #expect(try Self.populations(at: urlA) == ["A": 0])
        try c.addPersistentStore(type: .sqlite, at: urlA)
        try ctx.performAndWait { try ctx.save() }
        #expect(try Self.populations(at: urlA) == ["A": 10])
        let bTowns = try Self.populations(at: urlB)
        let aTowns = try Self.populations(at: urlA)
        #expect(bTowns["B"] == 10)
        #expect((bTowns["C"] ?? aTowns["C"]) == 0)
    }

    /// One thread removes and attaches the store again and again while others save and count:
    /// every call succeeds or throws a typed error, and the file holds exactly the towns whose
    /// saves succeeded.
    @Test func savesAndFetchesWhileTheStoreComesAndGoes() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("s.sqlite")
        let c = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        try c.addPersistentStore(type: .sqlite, at: url)
        let saved = LockedValue(0)
        let unexpected = LockedValue<[String]>([])
        let stop = LockedValue(false)
        let group = DispatchGroup()
        // Each toggle waits for two saves to have succeeded since the previous one.
        let progress = DispatchSemaphore(value: 0)
        let writers = 3
        for w in 0..<writers {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                var i = 0
                while !stop.withLock({ $0 }) {
                    i += 1
                    let ctx = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
                    ctx.performAndWait {
                        let t = Town(context: ctx)
                        t.name = "W\(w)-\(i)"
                        do {
                            try ctx.save()
                            saved.withLock { $0 += 1 }
                            progress.signal()
                        } catch let error as CoherenceError {
                            if ![.storeNotAttached, .noStoreForEntity].contains(error.code) {
                                unexpected.withLock { $0.append("save: \(error)") }
                            }
                        } catch {
                            unexpected.withLock { $0.append("save: \(error)") }
                        }
                    }
                }
            }
        }
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            let ctx = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            while !stop.withLock({ $0 }) {
                ctx.performAndWait {
                    do {
                        _ = try ctx.fetch(FetchRequest<Town>())
                        ctx.reset()
                    } catch let error as CoherenceError {
                        if ![.storeNotAttached, .noStoreForEntity].contains(error.code) {
                            unexpected.withLock { $0.append("fetch: \(error)") }
                        }
                    } catch {
                        unexpected.withLock { $0.append("fetch: \(error)") }
                    }
                }
            }
        }
        let toggler = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { toggler.signal() }
            for _ in 0..<40 {
                progress.wait()
                progress.wait()
                do {
                    if let s = c.persistentStores.first { try c.remove(s) }
                    try c.addPersistentStore(type: .sqlite, at: url)
                } catch {
                    unexpected.withLock { $0.append("toggle: \(error)") }
                }
            }
        }
        toggler.wait()
        stop.withLock { $0 = true }
        group.wait()
        #expect(unexpected.withLock { $0 } == [])
        #expect(try Self.populations(at: url).count == saved.withLock { $0 })
    }

    /// Fifty rounds of a coordinator with history, remote-change notifications, a consumer of
    /// its remote changes, a pinned query generation and a fetched-results controller: each
    /// round's coordinator goes away and leaves no file of the store open.
    @Test func fullyListenedCoordinatorsGoAway() async throws {
        let dir = try TemporaryDirectory()
        let prefix = dir.url.resolvingSymlinksInPath().path + "/"
        for round in 0..<50 {
            weak var weakCoordinator: PersistentStoreCoordinator?
            weak var weakContext: ManagedObjectContext?
            var consumer: Task<Void, Never>?
            do {
                let c = PersistentStoreCoordinator(managedObjectModel: try Self.model())
                weakCoordinator = c
                let url = dir.file("r\(round % 5).sqlite")
                try c.addPersistentStore(
                    type: .sqlite, at: url,
                    options: StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true))
                let stream = c.remoteChanges
                consumer = Task { for await _ in stream {} }
                let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
                try writer.performAndWait {
                    Town(context: writer).name = "T\(round)"
                    try writer.save()
                }
                let pinned = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
                weakContext = pinned
                var request = FetchRequest<Town>()
                request.sortDescriptors = [SortDescriptor(\Town.name)]
                let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: pinned)
                let count = try pinned.performAndWait {
                    try pinned.setQueryGeneration(from: .current)
                    try controller.performFetch()
                    return controller.fetchedObjects.count
                }
                #expect(count == round / 5 + 1)
            }
            await consumer?.value
            #expect(
                await ObserverLifetimeTests.settle { weakCoordinator == nil && weakContext == nil },
                "round \(round): coordinator \(weakCoordinator != nil) context \(weakContext != nil)")
            // (A weak reference reads nil once the coordinator's deinit has begun, on whichever
            // thread let go last: its connections close as that deinit ends.)
            // (Several rounds of yields: on a loaded machine, or under the thread sanitizer, that
            // thread may wait long for a core.)
            var rounds = 0
            while rounds < 20, await !ObserverLifetimeTests.settle({ !openFiles().contains { $0.hasPrefix(prefix) } }) { rounds += 1 }
            let open = openFiles().filter { $0.hasPrefix(prefix) }
            guard open.isEmpty else {
                Issue.record("round \(round) left open: \(open)")
                return
            }
        }
    }
}

/// The paths this process holds open (from /proc/self/fd).
private func openFiles() -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
}
