import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// A save that returned is never lost: detaching a store, stopping and releasing a container
// wait for the writes the strategy has accepted (a root context writes the view context's
// saves later with IndirectNested and Mixed). Each race is forced with a gate on the root
// context's queue that opens only when the container starts waiting for pending saves: without
// the wait, the store is gone before the root writes, every time.

/// A record in the global store.
final class Ledger: ManagedObject {
    @Attribute(.unique) var title: String = ""
}

/// A record in a user's store.
final class Jotting: ManagedObject {
    @Attribute(.unique) var text: String = ""
}

private func durableModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(types: [Ledger.self, Jotting.self], configurations: ["Global": ["Ledger"], "User": ["Jotting"]])
}

/// The four strategies, as test arguments.
enum StrategyKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case direct, directIndependent, indirectNested, mixed
    var testDescription: String { rawValue }
    /// Whether a root context writes the view context's saves later.
    var writesLater: Bool { self == .indirectNested || self == .mixed }
}

/// A started connect of one strategy kind with a global store and alice's store in `dir`.
final class DurableHarness: Sendable {
    let kind: StrategyKind
    let dir: URL
    nonisolated(unsafe) var connect: (any Connect)?
    let userStore: PersistentStore
    let userFile: URL
    let root: ManagedObjectContext?

    init(_ kind: StrategyKind, in directory: TemporaryDirectory, name: String = "Durable") throws {
        self.kind = kind
        dir = directory.url
        let model = try durableModel()
        let connect: any Connect
        switch kind {
        case .direct: connect = GenericConnect<ContextStrategy.Direct>(name: name, managedObjectModel: model)
        case .directIndependent: connect = GenericConnect<ContextStrategy.DirectIndependent>(name: name, managedObjectModel: model)
        case .indirectNested: connect = GenericConnect<ContextStrategy.IndirectNested>(name: name, managedObjectModel: model)
        case .mixed: connect = GenericConnect<ContextStrategy.Mixed>(name: name, managedObjectModel: model)
        }
        try connect.attachPersistentStore(at: dir, for: StoreConfiguration(name: "Global"))
        try connect.start()
        userStore = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "alice", under: dir),
            for: StoreConfiguration(name: "User"))
        userFile = try #require(userStore.url)
        root = Self.writingContexts(of: connect).first
        self.connect = connect
    }

    static func writingContexts(of connect: any Connect) -> [ManagedObjectContext] {
        switch connect {
        case let c as GenericConnect<ContextStrategy.IndirectNested>: return c.strategy.writingContexts
        case let c as GenericConnect<ContextStrategy.Mixed>: return c.strategy.writingContexts
        default: return []
        }
    }

    /// Sets the container's wait hook.
    func onWait(_ hook: @escaping @Sendable () -> Void) {
        switch connect {
        case let c as GenericConnect<ContextStrategy.Direct>: c.willWaitForPendingSaves = hook
        case let c as GenericConnect<ContextStrategy.DirectIndependent>: c.willWaitForPendingSaves = hook
        case let c as GenericConnect<ContextStrategy.IndirectNested>: c.willWaitForPendingSaves = hook
        case let c as GenericConnect<ContextStrategy.Mixed>: c.willWaitForPendingSaves = hook
        default: break
        }
    }

    func waitForPendingSaves() async throws {
        switch connect {
        case let c as GenericConnect<ContextStrategy.Direct>: try await c.waitForPendingSaves()
        case let c as GenericConnect<ContextStrategy.DirectIndependent>: try await c.waitForPendingSaves()
        case let c as GenericConnect<ContextStrategy.IndirectNested>: try await c.waitForPendingSaves()
        case let c as GenericConnect<ContextStrategy.Mixed>: try await c.waitForPendingSaves()
        default: break
        }
    }

    var view: ManagedObjectContext { connect!.viewContext }

    /// Closes the root context's queue, from the view context's next save on (after the save
    /// has pushed its changes into the root context, before the root's write is queued), until
    /// the container starts waiting for pending saves or `release()` is called. Returns the
    /// release.
    @discardableResult
    func gateRoot() -> @Sendable () -> Void {
        let gate = DispatchSemaphore(value: 0)
        let opened = LockedValue(false)
        let open: @Sendable () -> Void = {
            let first = opened.withLock { o -> Bool in
                defer { o = true }; return !o
            }
            if first { gate.signal() }
        }
        onWait(open)
        guard let root else { return open }
        let closed = LockedValue(false)
        let observer = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: view, queue: nil) {
            _ in
            let first = closed.withLock { c -> Bool in
                defer { c = true }; return !c
            }
            if first { root.perform { gate.wait() } }
        }
        observers.append(observer)
        return open
    }
    /// Used on the test's task only.
    private nonisolated(unsafe) var observers: [any NSObjectProtocol] = []

    deinit {
        for o in observers { NotificationCenter.default.removeObserver(o) }
    }

    /// The memo texts in alice's file, read by a new coordinator.
    func memosOnDisk() throws -> [String] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try durableModel())
        try coordinator.addPersistentStore(type: .sqlite, configuration: "User", at: userFile)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try context.performAndWait { try context.fetch(FetchRequest<Jotting>()).map(\.text).sorted() }
    }

    func saveInView(_ text: String) async throws {
        let view = self.view
        try await view.perform {
            let memo = Jotting(context: view)
            memo.text = text
            try view.save()
        }
    }

    func saveInBackground(_ text: String) async throws {
        let background = connect!.newBackgroundContext()
        try await background.perform {
            let memo = Jotting(context: background)
            memo.text = text
            try background.save()
        }
    }

    /// Saves a memo straight to the coordinator (bypassing the strategy).
    func saveDirectly(_ text: String) throws {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: connect!.persistentStoreCoordinator)
        try context.performAndWait {
            let memo = Jotting(context: context)
            memo.text = text
            try context.save()
        }
    }
}

@Suite("Durable saves: detach, stop and release wait for accepted writes", .timeLimit(.minutes(10)))
struct DurableSaveTests {
    @Test(arguments: StrategyKind.allCases)
    func viewSaveThenDetachAtOnce(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let release = h.gateRoot()
        try await h.saveInView("written before logout")
        try h.connect!.detach(persistentStore: h.userStore)
        release()
        h.root?.performAndWait {}
        #expect(try h.memosOnDisk() == ["written before logout"])
        #expect(!h.connect!.persistentStoreCoordinator.persistentStores.contains { $0 === h.userStore })
    }

    @Test(arguments: StrategyKind.allCases)
    func backgroundSaveThenDetachAtOnce(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let release = h.gateRoot()
        try await h.saveInBackground("from the background")
        try h.connect!.detach(persistentStore: h.userStore)
        release()
        h.root?.performAndWait {}
        #expect(try h.memosOnDisk() == ["from the background"])
    }

    /// With IndirectNested a background save queues a view-context save; that save stays
    /// pending for a detach until it has pushed into the root context. Forced: the queued save
    /// is held in the view context's will-save notification while the count is read (it used to
    /// be zero there, and a detach then removed the store before the root wrote).
    @Test func aQueuedViewSaveIsPendingUntilItHasFinished() async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(.indirectNested, in: dir)
        let connect = try #require(h.connect as? GenericConnect<ContextStrategy.IndirectNested>)
        let reached = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let held = LockedValue(false)
        let observer = NotificationCenter.default.addObserver(
            forName: ManagedObjectContext.willSaveNotification, object: h.view, queue: nil
        ) { _ in
            let first = held.withLock { f -> Bool in
                defer { f = true }; return !f
            }
            if first {
                reached.signal()
                proceed.wait()
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        // The count is read on a thread of its own while the main thread is held, so that
        // releasing it never waits for the cooperative pool (which other tests may be blocking
        // on the main queue).
        let emptyWhileHeld = LockedValue<Bool?>(nil)
        let strategy = connect.strategy
        Thread {
            reached.wait()
            emptyWhileHeld.withLock { $0 = strategy.viewSaves.isEmpty }
            proceed.signal()
        }.start()
        try await h.saveInBackground("queued")
        try connect.detach(persistentStore: h.userStore)
        #expect(emptyWhileHeld.withLock { $0 } == false)
        #expect(connect.strategy.viewSaves.isEmpty)
        #expect(try h.memosOnDisk() == ["queued"])
    }

    /// With IndirectNested a background save queues a view-context save on the main queue; a
    /// detach on the main actor cannot wait for that queue, so it runs the save itself.
    @Test(arguments: StrategyKind.allCases)
    func backgroundSaveThenDetachOnTheMainActor(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let release = h.gateRoot()
        try await h.saveInBackground("detached on main")
        try await MainActor.run { try h.connect!.detach(persistentStore: h.userStore) }
        release()
        h.root?.performAndWait {}
        #expect(try h.memosOnDisk() == ["detached on main"])
    }

    @Test(arguments: StrategyKind.allCases)
    func saveThenReleaseTheContainer(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let root = h.root
        let release = h.gateRoot()
        try await h.saveInView("saved, then the app quit")
        weak let released = h.connect as AnyObject?
        h.connect = nil
        #expect(released == nil)
        release()
        root?.performAndWait {}
        #expect(try h.memosOnDisk() == ["saved, then the app quit"])
    }

    @Test(arguments: StrategyKind.allCases)
    func stopWaitsForAcceptedSaves(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let release = h.gateRoot()
        try await h.saveInView("saved before stop")
        try h.connect!.stop()
        release()
        #expect(h.connect!.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(try h.memosOnDisk() == ["saved before stop"])
    }

    /// 100 rounds of "view save, then detach at once", ungated, per strategy.
    @Test(arguments: StrategyKind.allCases)
    func hundredRoundsOfSaveAndLogout(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let connect = h.connect!
        try connect.detach(persistentStore: h.userStore)
        let location = try StoreLocation.location(forUser: "alice", under: dir.url)
        for round in 0..<100 {
            let store = try connect.attachPersistentStore(at: location, for: StoreConfiguration(name: "User"))
            try await h.saveInView("round \(round)")
            try connect.detach(persistentStore: store)
        }
        #expect(try h.memosOnDisk().count == 100)
    }

    /// A root write that fails during a detach: the detach throws the write's error, the store
    /// stays attached and the changes stay in the root context; fixed and saved, the detach
    /// goes through.
    @Test(arguments: [StrategyKind.indirectNested, .mixed])
    func failingRootWriteKeepsTheStoreAttached(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let connect = h.connect!
        let root = try #require(h.root)
        try h.saveDirectly("taken")
        try await h.saveInView("taken")  // accepted into the root; its write will conflict

        let error = #expect(throws: CoherenceError.self) { try connect.detach(persistentStore: h.userStore) }
        #expect(error?.code == .conflict)
        #expect(connect.persistentStoreCoordinator.persistentStores.contains { $0 === h.userStore })
        let held = root.performAndWait { root.insertedObjects.compactMap { ($0 as? Jotting)?.text } }
        #expect(held == ["taken"])

        // The app renames the memo in the root context and saves it; now the detach writes nothing and goes through.
        try root.performAndWait {
            for case let memo as Jotting in root.insertedObjects { memo.text = "taken, again" }
            try root.save()
        }
        try connect.detach(persistentStore: h.userStore)
        #expect(try h.memosOnDisk() == ["taken", "taken, again"])
    }

    @Test(arguments: StrategyKind.allCases)
    func waitForPendingSavesReturnsWhenTheSaveIsOnDisk(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let release = h.gateRoot()
        try await h.saveInView("durable")
        try await h.waitForPendingSaves()
        release()
        #expect(try h.memosOnDisk() == ["durable"])
    }

    /// The first propagation error since the last call is rethrown once; the error handler
    /// receives it too.
    @Test(arguments: [StrategyKind.indirectNested, .mixed])
    func waitForPendingSavesRethrowsAPropagationError(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let (handled, continuation) = AsyncStream<String>.makeStream()
        if let c = h.connect as? GenericPersistentContainer<ContextStrategy.Mixed> {
            c.errorHandler = { continuation.yield("\($0)") }
        } else if let c = h.connect as? GenericPersistentContainer<ContextStrategy.IndirectNested> {
            c.errorHandler = { continuation.yield("\($0)") }
        }
        try h.saveDirectly("twice")
        try await h.saveInView("twice")
        let error = await #expect(throws: CoherenceError.self) { try await h.waitForPendingSaves() }
        #expect(error?.code == .conflict)
        var iterator = handled.makeAsyncIterator()
        #expect(await iterator.next()?.contains("conflict") == true)
        // Claimed: the next call has nothing to report.
        try await h.waitForPendingSaves()
    }

    /// An action that is still writing when its store is detached: its save throws a clear error
    /// (the store is gone) and the proxy reports it; nothing is written half-way or silently dropped.
    @Test(arguments: StrategyKind.allCases)
    func detachWhileAnActionWrites(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let h = try DurableHarness(kind, in: dir)
        let connect = h.connect!
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let proxy = try connect.execute(GatedMemoAction(text: "late", started: started, proceed: proceed))
        started.wait()
        try connect.detach(persistentStore: h.userStore)
        proceed.signal()
        proxy.waitUntilFinished()
        let error = proxy.error as? CoherenceError
        #expect(error?.code == .noStoreForEntity)
        #expect(error?.entityName == "Jotting")
        h.root?.performAndWait {}
        #expect(try h.memosOnDisk() == [])
    }

    /// A propagation error with no handler of the app's own goes through the library's logger.
    @Test func propagationErrorsGoThroughTheLogger() async throws {
        let dir = try TemporaryDirectory()
        let name = "Logged\(UUID().uuidString.prefix(8))"
        let h = try DurableHarness(.mixed, in: dir, name: name)
        // The message names the container.
        let recorder = RecordingLogger(marker: "container '\(name)'")
        let previous = CoherenceLogging.logger
        CoherenceLogging.logger = recorder
        defer { CoherenceLogging.logger = previous }
        try h.saveDirectly("logged")
        try await h.saveInView("logged")
        await #expect(throws: CoherenceError.self) { try await h.waitForPendingSaves() }
        let message = await recorder.next()
        #expect(message.level == .error)
        #expect(message.category == "stack")
        #expect(message.text.contains("conflict"))
    }
}

/// An entity action that inserts a memo once the test lets it.
final class GatedMemoAction: EntityAction {
    typealias ManagedObjectType = Jotting
    let text: String
    let started: DispatchSemaphore
    let proceed: DispatchSemaphore
    init(text: String, started: DispatchSemaphore, proceed: DispatchSemaphore) {
        self.text = text
        self.started = started
        self.proceed = proceed
    }
    func execute(context: ActionContext) throws {
        started.signal()
        proceed.wait()
        try context.performAndWait {
            let memo = Jotting(context: context)
            memo.text = text
            try context.save()
        }
    }
}

/// A logger that hands on the messages mentioning a marker.
final class RecordingLogger: CoherenceLogger {
    let marker: String
    private let stream: AsyncStream<LogMessage>
    private let continuation: AsyncStream<LogMessage>.Continuation
    init(marker: String) {
        self.marker = marker
        (stream, continuation) = AsyncStream<LogMessage>.makeStream()
    }
    var level: LogLevel { .debug }
    func log(_ message: LogMessage) {
        if message.text.contains(marker) { continuation.yield(message) }
    }
    func next() async -> LogMessage {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next() ?? LogMessage(level: .off, category: "", text: "")
    }
}
