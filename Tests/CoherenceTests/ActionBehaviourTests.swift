import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// MARK: Fixtures (prefixed `Act` to stay clear of other suites' entities)

/// Managed through a `userInfo` string.
final class ActProduct: ManagedObject {
    @Attribute var sku: String = ""
    @Attribute var title: String = ""
    @Attribute var price: Double = 0
    @Attribute var stock: Int = 0
    @Attribute var active: Bool = false
    @Attribute var category: String = ""
    @Attribute var note: String?
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "sku"] }
}

/// Managed through a `userInfo` array of two attributes (a composite key).
final class ActPair: ManagedObject {
    @Attribute var region: String = ""
    @Attribute var code: Int = 0
    @Attribute var label: String = ""
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": ["region", " code "]] }
}

/// Managed through a uniqueness constraint.
final class ActTag: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Attribute var uses: Int = 0
}

/// Not managed: no uniqueness attributes.
final class ActNote: ManagedObject {
    @Attribute var text: String = ""
}

/// Abstract (not managed) although it names uniqueness attributes; its sub-entity is managed.
class ActVehicle: ManagedObject {
    @Attribute var vin: String = ""
    override class var isAbstractEntity: Bool { self == ActVehicle.self }
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "vin"] }
}

final class ActCar: ActVehicle {
    @Attribute var seats: Int = 0
}

typealias ActConnect = GenericConnect<ContextStrategy.Mixed>

func makeBehaviourConnect(_ dir: TemporaryDirectory, name: String = "ActionBehaviour") throws -> ActConnect {
    let model = try ManagedObjectModel(types: [ActProduct.self, ActPair.self, ActTag.self, ActNote.self, ActVehicle.self, ActCar.self])
    let connect = ActConnect(name: name, managedObjectModel: model)
    connect.storeLocation = dir.url
    return connect
}

struct ActTimeout: Error {}

/// How long a test waits for something that must happen before it calls it a hang: a guard
/// so a broken rule fails instead of hanging, never a timing assertion. Generous, because on
/// a loaded 2-core machine other tests' long synchronous work can hold the cooperative pool
/// for minutes; a passing test never waits for it.
let testGuardSeconds: Double = 300

/// Waits for a semaphore on a thread of its own (never on the cooperative pool); false after
/// `seconds` (a guard so a broken rule fails instead of hanging, not a timing assertion).
func waitOffPool(_ semaphore: DispatchSemaphore, seconds: Double = testGuardSeconds) async -> Bool {
    await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
        Thread { c.resume(returning: semaphore.wait(timeout: .now() + seconds) == .success) }.start()
    }
}

/// Runs `body` on a thread of its own and waits for it without blocking the cooperative pool.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (c: CheckedContinuation<T, Never>) in
        Thread { c.resume(returning: body()) }.start()
    }
}

/// Runs throwing synchronous work (a long import, a million-row check) on a thread of its own,
/// so that it never holds one of the few cooperative threads the other tests' tasks need.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onOwnThread { Result { try body() } }.get()
}

/// A one-shot gate that async code can await.
final class ActLatch: Sendable {
    private let state = LockedValue<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.open = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w.resume() }
    }
    var isOpen: Bool { state.withLock { $0.open } }
    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.open { return true }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }
}

/// Counts concurrent executions and keeps the most seen at once.
final class ConcurrencyGauge: Sendable {
    private let state = LockedValue((current: 0, peak: 0, total: 0))
    func enter() {
        state.withLock {
            $0.current += 1; $0.peak = max($0.peak, $0.current)
        }
    }
    func leave() {
        state.withLock {
            $0.current -= 1; $0.total += 1
        }
    }
    var peak: Int { state.withLock { $0.peak } }
    var total: Int { state.withLock { $0.total } }
}

/// `parties` threads wait until all arrived.
final class Rendezvous: Sendable {
    let parties: Int
    private let arrived = LockedValue(0)
    private let gate = DispatchSemaphore(value: 0)
    init(_ parties: Int) { self.parties = parties }
    /// False when the others did not come (after a generous guard time).
    func arriveAndWait(seconds: Double = testGuardSeconds) -> Bool {
        let n = arrived.withLock {
            $0 += 1; return $0
        }
        if n == parties { for _ in 0..<parties { gate.signal() } }
        return gate.wait(timeout: .now() + seconds) == .success
    }
}

/// A little real work, so overlapping executions get a chance to overlap.
func busyWork() {
    var x = 0
    for i in 0..<2_000 { x &+= i &* i }
    if x == 42 { print(x) }
}

/// A generic action that counts concurrency; the first ones can meet at a rendezvous.
final class GaugedAction: GenericAction {
    let gauge: ConcurrencyGauge
    let rendezvous: Rendezvous?
    init(_ gauge: ConcurrencyGauge, rendezvous: Rendezvous? = nil) {
        self.gauge = gauge
        self.rendezvous = rendezvous
    }
    func execute() throws {
        gauge.enter()
        defer { gauge.leave() }
        if let rendezvous {
            guard rendezvous.arriveAndWait() else { throw ActTimeout() }
        } else {
            busyWork()
        }
    }
}

/// An entity action that counts concurrency per entity and can meet another at a rendezvous.
final class GaugedEntityAction<T: ManagedObject>: EntityAction {
    typealias ManagedObjectType = T
    let gauge: ConcurrencyGauge
    let rendezvous: Rendezvous?
    init(_ gauge: ConcurrencyGauge, rendezvous: Rendezvous? = nil) {
        self.gauge = gauge
        self.rendezvous = rendezvous
    }
    func execute(context: ActionContext) throws {
        gauge.enter()
        defer { gauge.leave() }
        if let rendezvous {
            guard rendezvous.arriveAndWait() else { throw ActTimeout() }
        } else {
            busyWork()
        }
    }
}

/// A generic action that blocks until released; counts runs and cancel() calls.
final class GateAction: GenericAction {
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let runs = LockedValue(0)
    let cancels = LockedValue(0)
    let throwsAtEnd: Bool
    let releaseOnCancel: Bool
    init(throwsAtEnd: Bool = false, releaseOnCancel: Bool = true) {
        self.throwsAtEnd = throwsAtEnd
        self.releaseOnCancel = releaseOnCancel
    }
    func execute() throws {
        runs.withLock { $0 += 1 }
        started.signal()
        guard release.wait(timeout: .now() + testGuardSeconds) == .success else { throw ActTimeout() }
        if throwsAtEnd { throw Boom() }
    }
    func cancel() {
        cancels.withLock { $0 += 1 }
        if releaseOnCancel { release.signal() }
    }
}

/// An entity action on `ActProduct` that blocks until released, then merges `items` (if any).
final class GateProductAction: EntityAction {
    typealias ManagedObjectType = ActProduct
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let runs = LockedValue(0)
    let items: [[String: any Sendable]]?
    init(merging items: [[String: any Sendable]]? = nil) { self.items = items }
    func execute(context: ActionContext) throws {
        runs.withLock { $0 += 1 }
        started.signal()
        guard release.wait(timeout: .now() + testGuardSeconds) == .success else { throw ActTimeout() }
        if let items { try context.merge(objects: items, for: ActProduct.self) }
    }
}

/// An entity action that only counts its runs.
final class CountingEntityAction<T: ManagedObject>: EntityAction {
    typealias ManagedObjectType = T
    let runs = LockedValue(0)
    func execute(context: ActionContext) throws { runs.withLock { $0 += 1 } }
}

/// Records a proxy's completion-block calls and the state seen in each.
final class CompletionRecorder: Sendable {
    let states = LockedValue<[ActionProxy.State]>([])
    var block: @Sendable (ActionProxy) -> Void { { [self] p in states.withLock { $0.append(p.state) } } }
    var calls: [ActionProxy.State] { states.withLock { $0 } }
}

/// Records action notifications (NotificationCenter) for chosen proxies.
final class ActionNotificationLog: @unchecked Sendable {
    // @unchecked Sendable: `entries` is behind a lock; the tokens are set once in init.
    struct Entry: Sendable {
        let name: Notification.Name
        /// Held strongly: an ObjectIdentifier of a freed proxy could be reused by a later one.
        let proxy: ActionProxy?
        let object: ObjectIdentifier?
        let stateAtPost: ActionProxy.State?
    }
    private let entries = LockedValue<[Entry]>([])
    private var tokens: [any NSObjectProtocol] = []

    init() {
        for name in [Notification.Name.actionDidStartExecuting, .actionDidFinishExecuting] {
            tokens.append(
                NotificationCenter.default.addObserver(forName: name, object: nil, queue: nil) { [weak self] note in
                    let proxy = note.userInfo?["ActionProxy"] as? ActionProxy
                    let entry = Entry(
                        name: note.name, proxy: proxy,
                        object: (note.object as AnyObject?).map(ObjectIdentifier.init), stateAtPost: proxy?.state)
                    self?.entries.withLock { $0.append(entry) }
                })
        }
    }

    /// The notifications about `proxy`, in order.
    func entries(for proxy: ActionProxy) -> [Entry] {
        entries.withLock { $0.filter { $0.proxy === proxy } }
    }

    deinit { for t in tokens { NotificationCenter.default.removeObserver(t) } }
}

// MARK: Managed entities

@Suite("Action behaviour: managed entities", .timeLimit(.minutes(10)))
struct ActionManagedEntityTests {
    private func attributes(_ names: String...) -> [PropertyDescription] {
        names.map { AttributeDescription(name: $0, type: .string) }
    }

    @Test func uniquenessAttributesFollowUserInfoInheritanceAndConstraints() throws {
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Listed", properties: attributes("a", "b", "c"), userInfo: ["uniquenessAttributes": "  b ,a  "]),
            EntityDescription(name: "Arrayed", properties: attributes("a", "b", "c"), userInfo: ["uniquenessAttributes": [" c", "a "]]),
            EntityDescription(name: "Base", isAbstract: true, properties: attributes("key"), userInfo: ["uniquenessAttributes": "key"]),
            EntityDescription(name: "Derived", superentity: "Base", properties: attributes("extra")),
            EntityDescription(
                name: "Constrained", properties: attributes("a", "b", "c", "d"), uniquenessConstraints: [["a", "b"], ["c"], ["d"]]),
            EntityDescription(name: "Tied", properties: attributes("a", "b", "c", "d"), uniquenessConstraints: [["c", "d"], ["a", "b"]]),
            EntityDescription(
                name: "UserInfoWins", properties: attributes("a", "b"), uniquenessConstraints: [["b"]],
                userInfo: ["uniquenessAttributes": "a"]),
            EntityDescription(name: "Missing", properties: attributes("a"), userInfo: ["uniquenessAttributes": "a, ghost"]),
            EntityDescription(
                name: "MissingInChild", superentity: "Base", properties: attributes("x"),
                userInfo: ["uniquenessAttributes": "x, nope"]),
            EntityDescription(name: "Plain", properties: attributes("a")),
            EntityDescription(name: "AbstractConstrained", isAbstract: true, properties: attributes("a"), uniquenessConstraints: [["a"]]),
            EntityDescription(name: "ConcreteBase", properties: attributes("k"), uniquenessConstraints: [["k"]]),
            EntityDescription(name: "ConcreteChild", superentity: "ConcreteBase", properties: attributes("z"))
        ])
        func keys(_ name: String) -> [String]? {
            model.entitiesByName[name].flatMap { ManagedEntities.uniquenessAttributes(of: $0) }
        }
        #expect(keys("Listed") == ["b", "a"])  // comma-separated, trimmed
        #expect(keys("Arrayed") == ["c", "a"])  // an array, trimmed
        #expect(keys("Derived") == ["key"])  // inherited from the super-entity
        #expect(keys("Base") == nil)  // abstract
        #expect(keys("Constrained") == ["c"])  // the shortest constraint
        #expect(keys("Tied") == ["c", "d"])  // the first on ties
        #expect(keys("UserInfoWins") == ["a"])  // userInfo before constraints
        #expect(keys("Missing") == nil)  // names a missing attribute
        #expect(keys("MissingInChild") == nil)
        #expect(keys("Plain") == nil)
        #expect(keys("AbstractConstrained") == nil)
        #expect(keys("ConcreteBase") == ["k"])
        #expect(keys("ConcreteChild") == ["k"])  // the super-entity's constraint
        #expect(
            ManagedEntities.all(in: model) == [
                "Listed": ["b", "a"], "Arrayed": ["c", "a"], "Derived": ["key"],
                "Constrained": ["c"], "Tied": ["c", "d"], "UserInfoWins": ["a"],
                "ConcreteBase": ["k"], "ConcreteChild": ["k"]
            ])
    }

    @Test func connectManagesTypedEntitiesOnlyWhileStarted() throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        #expect(connect.managedEntities.isEmpty)
        try connect.start()
        #expect(connect.managedEntities == ["ActProduct": ["sku"], "ActPair": ["region", "code"], "ActTag": ["name"], "ActCar": ["vin"]])
        try connect.stop()
        #expect(connect.managedEntities.isEmpty)
    }

    private func expectUnmanaged(_ name: String, _ body: () throws -> ActionProxy) {
        do {
            let proxy = try body()
            Issue.record("execute accepted an action for '\(name)': \(proxy)")
        } catch let error as ActionError {
            #expect(error.code == .unmanagedEntity)
            #expect(error.message == "Entity '\(name)' not managed by Connect")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func entityActionsThrowUnmanagedEntityAtOnce() throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let beforeStart = CountingEntityAction<ActProduct>()
        expectUnmanaged("ActProduct") { try connect.execute(beforeStart) }
        try connect.start()
        let note = CountingEntityAction<ActNote>()
        let vehicle = CountingEntityAction<ActVehicle>()
        expectUnmanaged("ActNote") { try connect.execute(note) }
        expectUnmanaged("ActVehicle") { try connect.execute(vehicle) }  // abstract
        let car = CountingEntityAction<ActCar>()
        let carProxy = try connect.execute(car)
        carProxy.waitUntilFinished()
        try connect.stop()
        let afterStop = CountingEntityAction<ActProduct>()
        expectUnmanaged("ActProduct") { try connect.execute(afterStop) }
        #expect(carProxy.completionStatus == .successful && car.runs.withLock { $0 } == 1)
        let otherRuns =
            beforeStart.runs.withLock { $0 } + note.runs.withLock { $0 } + vehicle.runs.withLock { $0 } + afterStop.runs.withLock { $0 }
        #expect(otherRuns == 0)
        // start → stop → start manages again.
        try connect.start()
        let again = try connect.execute(CountingEntityAction<ActProduct>())
        again.waitUntilFinished()
        #expect(again.completionStatus == .successful)
    }
}

// MARK: Queues and widths

@Suite("Action behaviour: queues", .timeLimit(.minutes(10)))
struct ActionQueueBehaviourTests {
    @Test func genericActionsRunBeforeStartAtMostFiveAtOnce() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        #expect(connect.maxConcurrentGenericActions == 5)
        let gauge = ConcurrencyGauge()
        let rendezvous = Rendezvous(5)  // the first five must be able to run together
        var proxies: [ActionProxy] = []
        for i in 0..<1_000 {
            proxies.append(try connect.execute(GaugedAction(gauge, rendezvous: i < 5 ? rendezvous : nil)))
        }
        for p in proxies { await p.finished }
        #expect(!connect.isStarted)
        #expect(proxies.allSatisfy { $0.completionStatus == .successful })
        #expect(gauge.total == 1_000)
        #expect(gauge.peak == 5)
    }

    @Test func customGenericWidthIsRespected() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        connect.maxConcurrentGenericActions = 2
        #expect(connect.maxConcurrentGenericActions == 2)
        let gauge = ConcurrencyGauge()
        let rendezvous = Rendezvous(2)
        var proxies: [ActionProxy] = []
        for i in 0..<300 {
            proxies.append(try connect.execute(GaugedAction(gauge, rendezvous: i < 2 ? rendezvous : nil)))
        }
        for p in proxies { await p.finished }
        #expect(proxies.allSatisfy { $0.completionStatus == .successful })
        #expect(gauge.total == 300)
        #expect(gauge.peak == 2)
    }

    @Test func entityActionsOnOneEntityNeverOverlap() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let products = ConcurrencyGauge()
        let tags = ConcurrencyGauge()
        var proxies: [ActionProxy] = []
        for _ in 0..<60 {
            proxies.append(try connect.execute(GaugedEntityAction<ActProduct>(products)))
            proxies.append(try connect.execute(GaugedEntityAction<ActTag>(tags)))
        }
        for p in proxies { await p.finished }
        #expect(proxies.allSatisfy { $0.completionStatus == .successful })
        #expect(products.total == 60 && tags.total == 60)
        #expect(products.peak == 1)
        #expect(tags.peak == 1)
    }

    @Test func entityActionsOnTwoEntitiesRunAtTheSameTime() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        // Each waits for the other: both finish only if they run at the same time.
        let meeting = Rendezvous(2)
        let a = try connect.execute(GaugedEntityAction<ActProduct>(ConcurrencyGauge(), rendezvous: meeting))
        let b = try connect.execute(GaugedEntityAction<ActTag>(ConcurrencyGauge(), rendezvous: meeting))
        await a.finished
        await b.finished
        #expect(a.completionStatus == .successful)
        #expect(b.completionStatus == .successful)
    }
}

// MARK: Proxies

@Suite("Action behaviour: proxies", .timeLimit(.minutes(10)))
struct ActionProxyBehaviourTests {
    @Test func statesGoCreatedPendingExecutingFinished() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let log = ActionNotificationLog()
        // A proxy that was never queued is `created`.
        let fresh = ActionProxy(action: Counter(), completion: nil, notifier: ActionNotifier())
        #expect(fresh.state == .created && fresh.completionStatus == .unknown && !fresh.isCancelled)

        connect.suspended = true
        let action = GateAction()
        let completion = CompletionRecorder()
        let proxy = try connect.execute(action, completionBlock: completion.block)
        let queued = (proxy.state, proxy.completionStatus)
        connect.suspended = false
        let started = await waitOffPool(action.started)
        let running = (proxy.state, proxy.completionStatus, proxy.statistics.startTime != nil, proxy.statistics.executionTime)
        action.release.signal()
        await proxy.finished

        #expect(queued == (.pending, .unknown))
        #expect(started)
        #expect(running == (.executing, .unknown, true, 0))
        #expect(proxy.state == .finished && proxy.completionStatus == .successful && proxy.error == nil)
        #expect(log.entries(for: proxy).map(\.stateAtPost) == [.executing, .finished])
        #expect(completion.calls == [.finished])
        #expect(proxy.description.contains("finished") && proxy.description.contains("successful"))
    }

    @Test func cancelBeforeRunningBehindABlockedEntityQueue() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let log = ActionNotificationLog()
        let blocker = GateProductAction()
        let first = try connect.execute(blocker)
        let started = await waitOffPool(blocker.started)
        let waiting = CountingEntityAction<ActProduct>()
        let completion = CompletionRecorder()
        let proxy = try connect.execute(waiting, completionBlock: completion.block)
        let stateBefore = proxy.state
        proxy.cancel()
        await proxy.finished
        let blockerStateAfterCancel = first.state
        blocker.release.signal()
        await first.finished
        // The queue goes on after the cancelled action.
        let next = try connect.execute(CountingEntityAction<ActProduct>())
        await next.finished

        #expect(started && stateBefore == .pending)
        #expect(blockerStateAfterCancel == .executing)
        #expect(waiting.runs.withLock { $0 } == 0)
        #expect(proxy.completionStatus == .canceled && proxy.isCancelled && proxy.error == nil)
        #expect(log.entries(for: proxy).map(\.name) == [.actionDidStartExecuting, .actionDidFinishExecuting])
        #expect(completion.calls == [.finished])
        #expect(first.completionStatus == .successful && next.completionStatus == .successful)
        await #expect(throws: CancellationError.self) { try await proxy.value }
    }

    @Test func cancelBeforeRunningWhileSuspended() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let log = ActionNotificationLog()
        connect.suspended = true
        let action = Counter()
        let completion = CompletionRecorder()
        let proxy = try connect.execute(action, completionBlock: completion.block)
        proxy.cancel()
        proxy.cancel()
        await proxy.finished
        connect.suspended = false
        let after = try connect.execute(Counter())
        await after.finished
        #expect(action.count.withLock { $0 } == 0)
        #expect(proxy.completionStatus == .canceled)
        #expect(log.entries(for: proxy).map(\.name) == [.actionDidStartExecuting, .actionDidFinishExecuting])
        #expect(completion.calls == [.finished])
        #expect(after.completionStatus == .successful)
    }

    private func cancelRunning(throwing: Bool) async throws -> (GateAction, ActionProxy, CompletionRecorder, ActionNotificationLog, Bool) {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let log = ActionNotificationLog()
        let action = GateAction(throwsAtEnd: throwing)
        let completion = CompletionRecorder()
        let proxy = try connect.execute(action, completionBlock: completion.block)
        let started = await waitOffPool(action.started)
        // Many threads cancel at once.
        await onOwnThread { DispatchQueue.concurrentPerform(iterations: 64) { _ in proxy.cancel() } }
        await proxy.finished
        return (action, proxy, completion, log, started)
    }

    @Test func cancelWhileRunningThatReturnsNormally() async throws {
        let (action, proxy, completion, log, started) = try await cancelRunning(throwing: false)
        #expect(started)
        #expect(action.cancels.withLock { $0 } == 1)
        #expect(action.runs.withLock { $0 } == 1)
        #expect(proxy.completionStatus == .canceled && proxy.error == nil)
        #expect(completion.calls == [.finished])
        #expect(log.entries(for: proxy).map(\.name) == [.actionDidStartExecuting, .actionDidFinishExecuting])
        await #expect(throws: CancellationError.self) { try await proxy.value }
    }

    @Test func cancelWhileRunningThatThrowsKeepsTheError() async throws {
        let (action, proxy, completion, _, started) = try await cancelRunning(throwing: true)
        #expect(started)
        #expect(action.cancels.withLock { $0 } == 1)
        #expect(proxy.completionStatus == .canceled)
        #expect(proxy.error is Boom)
        #expect(completion.calls == [.finished])
        await #expect(throws: Boom.self) { try await proxy.value }
    }

    @Test func cancelAfterFinishingChangesNothing() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let log = ActionNotificationLog()
        let action = GateAction()
        let completion = CompletionRecorder()
        let proxy = try connect.execute(action, completionBlock: completion.block)
        action.release.signal()
        await proxy.finished
        let statistics = proxy.statistics
        await onOwnThread { DispatchQueue.concurrentPerform(iterations: 16) { _ in proxy.cancel() } }
        let failing = try connect.execute(Failing())
        await failing.finished
        failing.cancel()
        #expect(proxy.completionStatus == .successful && proxy.state == .finished && proxy.error == nil)
        #expect(!proxy.isCancelled)
        #expect(proxy.statistics == statistics)
        #expect(action.cancels.withLock { $0 } == 0)
        #expect(completion.calls == [.finished])
        #expect(log.entries(for: proxy).count == 2)
        #expect(failing.completionStatus == .failed && failing.error is Boom)
        try await proxy.value
    }

    @Test func waitingThreeWays() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let action = GateAction()
        let proxy = try connect.execute(action)
        // A thread blocked in waitUntilFinished returns only after the action finished.
        let waited = DispatchSemaphore(value: 0)
        let stateSeenByWaiter = LockedValue<ActionProxy.State?>(nil)
        Thread {
            proxy.waitUntilFinished()
            stateSeenByWaiter.withLock { $0 = proxy.state }
            waited.signal()
        }.start()
        let notYet = proxy.waitUntilFinished(timeout: .now())
        action.release.signal()
        let returned = await waitOffPool(waited)
        await proxy.finished
        try await proxy.value
        #expect(!notYet)
        #expect(returned && stateSeenByWaiter.withLock { $0 } == .finished)
        #expect(proxy.waitUntilFinished(timeout: .now()))

        let failing = try connect.execute(Failing())
        await #expect(throws: Boom.self) { try await failing.value }
        #expect(failing.completionStatus == .failed)
    }

    @Test func concurrentReadsSeeConsistentStates() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        connect.suspended = true
        let action = GateAction()
        let proxy = try connect.execute(action)
        let readers = 4
        let ready = Rendezvous(readers + 1)
        let problems = LockedValue<[String]>([])
        let done = DispatchGroup()
        let order: [ActionProxy.State] = [.created, .pending, .executing, .finished]
        for _ in 0..<readers {
            done.enter()
            Thread {
                defer { done.leave() }
                _ = ready.arriveAndWait()
                var last = 0
                while true {
                    // Outcome first, then state: an outcome or finish time seen implies `finished`.
                    let status = proxy.completionStatus
                    let statistics = proxy.statistics
                    let state = proxy.state
                    _ = proxy.description
                    _ = proxy.isCancelled
                    let index = order.firstIndex(of: state) ?? -1
                    if index < last { problems.withLock { $0.append("state went back to \(state)") } }
                    last = max(last, index)
                    if state == .finished {
                        let finalStatus = proxy.completionStatus
                        if finalStatus != .successful { problems.withLock { $0.append("finished with \(finalStatus)") } }
                        if proxy.statistics.finishTime == nil { problems.withLock { $0.append("finished without finish time") } }
                        break
                    }
                    if status != .unknown { problems.withLock { $0.append("status \(status) while \(state)") } }
                    if statistics.finishTime != nil { problems.withLock { $0.append("finish time while \(state)") } }
                }
            }.start()
        }
        action.release.signal()  // runs straight through once resumed: the readers spin briefly
        let met = await onOwnThread { ready.arriveAndWait() }
        connect.suspended = false
        let allDone = await onOwnThread { done.wait(timeout: .now() + testGuardSeconds) == .success }
        #expect(met && allDone)
        #expect(action.runs.withLock { $0 } == 1)
        #expect(problems.withLock { $0 } == [])
        #expect(proxy.state == .finished && proxy.completionStatus == .successful)
    }
}

// MARK: Async actions

/// Parks in a continuation that its cancel() resumes.
final class ParkedAsyncAction: AsyncGenericAction {
    let started = ActLatch()
    let parked = LockedValue<CheckedContinuation<Void, Never>?>(nil)
    let cancels = LockedValue(0)
    let sawCancelled = LockedValue<Bool?>(nil)
    func execute() async throws {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            parked.withLock { $0 = c }
            started.open()
        }
        sawCancelled.withLock { $0 = Task.isCancelled }
    }
    func cancel() {
        cancels.withLock { $0 += 1 }
        let c = parked.withLock { p -> CheckedContinuation<Void, Never>? in
            defer { p = nil }
            return p
        }
        c?.resume()
    }
}

/// Parks in a continuation that only Task cancellation resumes (its cancel() just counts).
final class TaskCancelledEntityAction: AsyncEntityAction {
    typealias ManagedObjectType = ActProduct
    let started = ActLatch()
    let parked = LockedValue<(continuation: CheckedContinuation<Void, Never>?, cancelled: Bool)>((nil, false))
    let cancels = LockedValue(0)
    let sawCancelled = LockedValue<Bool?>(nil)
    func execute(context: ActionContext) async throws {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = parked.withLock { p -> Bool in
                    if p.cancelled { return true }
                    p.continuation = c
                    return false
                }
                started.open()
                if resumeNow { c.resume() }
            }
        } onCancel: {
            let c = parked.withLock { p -> CheckedContinuation<Void, Never>? in
                p.cancelled = true
                defer { p.continuation = nil }
                return p.continuation
            }
            c?.resume()
        }
        sawCancelled.withLock { $0 = Task.isCancelled }
        try Task.checkCancellation()
    }
    func cancel() { cancels.withLock { $0 += 1 } }
}

@Suite("Action behaviour: async actions", .timeLimit(.minutes(10)))
struct ActionAsyncBehaviourTests {
    @Test func cancellingAnAsyncGenericActionCancelsItsTask() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let action = ParkedAsyncAction()
        let completion = CompletionRecorder()
        let proxy = try connect.execute(action, completionBlock: completion.block)
        await action.started.wait()
        let running = proxy.state
        await onOwnThread { DispatchQueue.concurrentPerform(iterations: 32) { _ in proxy.cancel() } }
        await proxy.finished
        #expect(running == .executing)
        #expect(action.sawCancelled.withLock { $0 } == true)
        #expect(action.cancels.withLock { $0 } == 1)
        #expect(proxy.completionStatus == .canceled)
        #expect(completion.calls == [.finished])
        await #expect(throws: CancellationError.self) { try await proxy.value }
    }

    @Test func asyncGenericActionSucceedsWhenNotCancelled() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let action = ParkedAsyncAction()
        let proxy = try connect.execute(action)
        await action.started.wait()
        let c = action.parked.withLock { p -> CheckedContinuation<Void, Never>? in
            defer { p = nil }
            return p
        }
        c?.resume()
        try await proxy.value
        #expect(action.sawCancelled.withLock { $0 } == false)
        #expect(action.cancels.withLock { $0 } == 0)
        #expect(proxy.completionStatus == .successful)
    }

    @Test func taskCancellationReachesAnAsyncEntityAction() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let action = TaskCancelledEntityAction()
        let proxy = try connect.execute(action)
        await action.started.wait()
        let running = proxy.state
        await onOwnThread { DispatchQueue.concurrentPerform(iterations: 32) { _ in proxy.cancel() } }
        await proxy.finished
        #expect(running == .executing)
        #expect(action.sawCancelled.withLock { $0 } == true)
        #expect(action.cancels.withLock { $0 } == 1)
        #expect(proxy.completionStatus == .canceled)
        #expect(proxy.error is CancellationError)
        await #expect(throws: CancellationError.self) { try await proxy.value }
        // The entity's serial queue goes on.
        let next = try connect.execute(CountingEntityAction<ActProduct>())
        try await next.value
    }
}
