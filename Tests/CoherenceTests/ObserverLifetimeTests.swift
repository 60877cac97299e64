import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A fetched-results controller with a snapshot stream, and a dual-coordinator container with a
/// history tracker monitoring it, go away with their last user: the controller's stream ends,
/// their contexts and coordinators are freed and no file of the store stays open. (Their last
/// references may be let go on the tasks that served them: the checks yield until then.)
@Suite("Lifetimes: controllers, trackers and dual containers", .timeLimit(.minutes(3)))
struct ObserverLifetimeTests {
    /// Whether `gone` became true while yielding (at most 20,000 times).
    static func settle(_ gone: () -> Bool) async -> Bool {
        for _ in 0..<20_000 {
            if gone() { return true }
            await Task.yield()
        }
        return gone()
    }

    @Test func controllerWithStreamAndContextGoAway() async throws {
        weak var weakController: FetchedResultsController<Town>?
        weak var weakContext: ManagedObjectContext?
        weak var weakCoordinator: PersistentStoreCoordinator?
        let dir = try TemporaryDirectory()
        var consumer: Task<Int, Never>?
        do {
            let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            weakCoordinator = coordinator
            try coordinator.addPersistentStore(type: .sqlite, at: dir.file("f.sqlite"))
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            weakContext = context
            var request = FetchRequest<Town>()
            request.sortDescriptors = [SortDescriptor(\Town.name)]
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
            weakController = controller
            let stream = controller.snapshots
            consumer = Task {
                var n = 0; for await _ in stream { n += 1 }; return n
            }
            try context.performAndWait {
                try controller.performFetch()
                Town(context: context).name = "A"
                try context.save()
            }
        }
        let ended = await consumer?.value
        #expect((ended ?? 0) >= 1)  // the stream had snapshots and ended with the controller
        #expect(
            await Self.settle { weakController == nil && weakContext == nil && weakCoordinator == nil },
            "controller \(weakController != nil) context \(weakContext != nil) coordinator \(weakCoordinator != nil)")
    }

    @Test func trackerAndDualContainerGoAway() async throws {
        weak var weakContainer: DualCoordinatorContainer?
        weak var weakWriter: PersistentStoreCoordinator?
        weak var weakReader: PersistentStoreCoordinator?
        weak var weakTracker: PersistentHistoryTracker?
        let dir = try TemporaryDirectory()
        do {
            let model = try ManagedObjectModel(types: [Town.self, Person.self, Club.self])
            let container = try DualCoordinatorContainer(
                managedObjectModel: model, storeURL: dir.file("d.sqlite"),
                storeOptions: StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true))
            weakContainer = container
            weakReader = container.persistentStoreCoordinator
            weakWriter = container.strategy.writerCoordinator
            let tracker = PersistentHistoryTracker(container: container)
            weakTracker = tracker
            await tracker.startMonitoring()
            let bg = container.newBackgroundContext()
            try bg.performAndWait {
                Town(context: bg).name = "X"
                try bg.save()
            }
        }
        let prefix = dir.url.resolvingSymlinksInPath().path + "/"
        #expect(
            await Self.settle { weakContainer == nil && weakWriter == nil && weakReader == nil && weakTracker == nil },
            "container \(weakContainer != nil) writer \(weakWriter != nil) reader \(weakReader != nil) tracker \(weakTracker != nil)")
        #expect(await Self.settle { !openFiles().contains { $0.hasPrefix(prefix) } }, "\(openFiles().filter { $0.hasPrefix(prefix) })")
    }
}

/// The paths this process holds open (from /proc/self/fd).
private func openFiles() -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
}
