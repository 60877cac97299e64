import Dispatch
import Foundation

/// A container that is started and stopped, and (see the actions guide) runs work for the app.
///
/// ```swift
/// let connect: Connect = GenericConnect<ContextStrategy.Mixed>(name: "MyModelName")
/// try connect.attachPersistentStores(for: [StoreConfiguration(name: "TransientData", type: .inMemory),
///                                          StoreConfiguration(name: "PersistentData", type: .sqlite)])
/// try connect.start()
/// ```
public protocol Connect: PersistentStack, ActionManager {
    /// Starts: attaches the default store when none is attached. A second call does nothing.
    /// Called while a `stop()` is under way, it throws `.invalidRequest` (the connect would not
    /// be started when it returned).
    func start() throws
    /// Starts on a global queue and calls `block` there with the error, if any.
    func start(block: @escaping @Sendable ((any Error)?) -> Void)
    /// Stops: cancels queued actions, waits for running ones and for the saves the strategy
    /// has accepted, then detaches every store. A second call does nothing; start → stop →
    /// start works. Called while a `start()` is under way, it throws `.invalidRequest`.
    ///
    /// When an accepted write failed, `stop()` throws its error and the connect stays started,
    /// with that store attached and the changes in the strategy's root context (see
    /// ``GenericPersistentContainer/detach(persistentStore:)``).
    func stop() throws
    /// Stops on a global queue and calls `block` there with the error, if any.
    func stop(block: @escaping @Sendable ((any Error)?) -> Void)
    /// While true, queued actions wait (running ones finish).
    var suspended: Bool { get set }
    /// Whether the connect is started.
    var isStarted: Bool { get }
}

/// The Coherence container: a ``GenericPersistentContainer`` with a start/stop lifecycle and
/// actions. `Strategy` arranges the contexts: ``ContextStrategy/Direct``,
/// ``ContextStrategy/DirectIndependent``, ``ContextStrategy/IndirectNested``,
/// ``ContextStrategy/Mixed`` or ``ContextStrategy/DualCoordinator``.
///
/// The four start-up scenarios:
///
/// ```swift
/// // 1. No configuration: start() attaches <default location>/HR.sqlite.
/// let connect = GenericConnect<ContextStrategy.Mixed>(name: "HR")
/// try connect.start()
///
/// // 2. Custom configurations.
/// try connect.attachPersistentStores(for: [StoreConfiguration(name: "TransientData", type: .inMemory),
///                                          StoreConfiguration(name: "PersistentData")])
/// try connect.start()
///
/// // 3. One store per logged-in user, at <location>/<user>.
/// let userStore = try connect.attachPersistentStore(at: StoreLocation.location(forUser: "alice"),
///                                                   for: StoreConfiguration(name: "UserData"))
/// // … at logout:
/// try connect.detach(persistentStore: userStore)
///
/// // 4. A global store first, then the user's stores (attach works after start).
/// try connect.attachPersistentStore(for: StoreConfiguration(name: "GlobalData"))
/// try connect.start()
/// try connect.attachPersistentStore(at: StoreLocation.location(forUser: "alice"), for: StoreConfiguration(name: "UserData"))
/// ```
public final class GenericConnect<Strategy: ContextStrategyType>: GenericPersistentContainer<Strategy>, Connect, @unchecked Sendable {
    // @unchecked Sendable: as GenericPersistentContainer; the lifecycle is behind a lock.

    /// The lifecycle of a connect.
    public enum State: Sendable, Equatable, CustomStringConvertible {
        /// Not started (initially, and after `stop()`).
        case stopped
        /// `start()` is running.
        case starting
        /// Started.
        case started
        /// `stop()` is running.
        case stopping
        /// The state's name, for example `started`.
        public var description: String {
            switch self {
            case .stopped: return "stopped"
            case .starting: return "starting"
            case .started: return "started"
            case .stopping: return "stopping"
            }
        }
    }

    private let lifecycle = LockedValue<State>(.stopped)
    let suspendedFlag = LockedValue(false)
    /// Queues and managed entities for actions.
    let actionEngine = ActionEngine()

    /// The current lifecycle state.
    public var state: State { lifecycle.withLock { $0 } }

    public var isStarted: Bool { state == .started }

    public var suspended: Bool {
        get { suspendedFlag.withLock { $0 } }
        set { setSuspended(newValue) }
    }

    public func start() throws {
        let from = lifecycle.withLock { state -> State in
            defer { if state == .stopped { state = .starting } }
            return state
        }
        switch from {
        case .stopped: break
        case .stopping:
            // Returning would let the caller believe the connect started.
            throw CoherenceError(
                .invalidRequest, "Connect '\(name)' is stopping: start it again once stop() has returned.")
        case .starting, .started: return
        }
        do {
            if let modelError { throw modelError }
            if persistentStoreCoordinator.persistentStores.isEmpty {
                try attachPersistentStore()
            }
            didStart()
            lifecycle.withLock { $0 = .started }
        } catch {
            lifecycle.withLock { $0 = .stopped }
            throw error
        }
    }

    public func start(block: @escaping @Sendable ((any Error)?) -> Void) {
        DispatchQueue.global().async {
            do { try self.start(); block(nil) } catch { block(error) }
        }
    }

    public func stop() throws {
        let from = lifecycle.withLock { state -> State in
            defer { if state == .started { state = .stopping } }
            return state
        }
        switch from {
        case .started: break
        case .starting:
            // Returning would let the caller believe the connect stopped.
            throw CoherenceError(
                .invalidRequest, "Connect '\(name)' is starting: stop it once start() has returned.")
        case .stopping, .stopped: return
        }
        willStop()
        do {
            try detachAllStores()
        } catch {
            // A store whose accepted writes failed is still attached: stay started around it.
            didStart()
            lifecycle.withLock { $0 = .started }
            throw error
        }
        lifecycle.withLock { $0 = .stopped }
    }

    public func stop(block: @escaping @Sendable ((any Error)?) -> Void) {
        DispatchQueue.global().async {
            do { try self.stop(); block(nil) } catch { block(error) }
        }
    }

    /// Releasing a connect cancels its queued actions: they never run, and their proxies end
    /// canceled. Running actions finish (an entity action keeps the connect until it ends). Its
    /// ``actionEvents`` streams end after the cancelled actions' events.
    deinit { actionEngine.release() }

    // Actions follow the lifecycle (see ActionManager.swift).
    func didStart() {
        actionEngine.notifier.setOwner(self)
        actionEngine.manage(managedObjectModel)
    }

    func willStop() { actionEngine.stop() }

    func setSuspended(_ value: Bool) {
        suspendedFlag.withLock { $0 = value }
        actionEngine.setSuspended(value)
    }
}
