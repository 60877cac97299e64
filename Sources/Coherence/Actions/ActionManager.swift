import Dispatch
import Foundation

/// Runs actions for the app: generic actions on a shared concurrent queue, entity actions on
/// their entity's serial queue. ``GenericConnect`` conforms.
///
/// ```swift
/// let proxy = try connect.execute(MyEntityAction(webService: service, parameter1: 1, parameter2: 2)) { proxy in
///     print(proxy.state, proxy.completionStatus, proxy.statistics)
/// }
/// proxy.cancel()   // any time
/// ```
public protocol ActionManager: AnyObject, Sendable {
    /// Queues a generic action; returns its proxy at once.
    @discardableResult
    func execute<A: GenericAction>(_ action: A, completionBlock: (@Sendable (ActionProxy) -> Void)?) throws -> ActionProxy
    /// Queues an async generic action; returns its proxy at once.
    @discardableResult
    func execute<A: AsyncGenericAction>(_ action: A, completionBlock: (@Sendable (ActionProxy) -> Void)?) throws -> ActionProxy
    /// Queues an entity action on its entity's serial queue; returns its proxy at once.
    /// - Throws: ``ActionError`` `.unmanagedEntity` at once when the entity is not managed or
    ///   the connect is not started.
    @discardableResult
    func execute<A: EntityAction>(_ action: A, completionBlock: (@Sendable (ActionProxy) -> Void)?) throws -> ActionProxy
    /// Queues an async entity action on its entity's serial queue; returns its proxy at once.
    @discardableResult
    func execute<A: AsyncEntityAction>(_ action: A, completionBlock: (@Sendable (ActionProxy) -> Void)?) throws -> ActionProxy
    /// How many generic actions run at once (default 5).
    var maxConcurrentGenericActions: Int { get set }
    /// Action notifications as an `AsyncSequence`. A ``GenericConnect``'s streams end when it
    /// is released (after the events of the queued actions that releasing it cancelled).
    var actionEvents: AsyncStream<ActionEvent> { get }
}

extension ActionManager {
    /// Queues a generic action; returns its proxy at once.
    @discardableResult
    public func execute<A: GenericAction>(_ action: A) throws -> ActionProxy { try execute(action, completionBlock: nil) }
    /// Queues an async generic action; returns its proxy at once.
    @discardableResult
    public func execute<A: AsyncGenericAction>(_ action: A) throws -> ActionProxy { try execute(action, completionBlock: nil) }
    /// Queues an entity action; returns its proxy at once.
    @discardableResult
    public func execute<A: EntityAction>(_ action: A) throws -> ActionProxy { try execute(action, completionBlock: nil) }
    /// Queues an async entity action; returns its proxy at once.
    @discardableResult
    public func execute<A: AsyncEntityAction>(_ action: A) throws -> ActionProxy { try execute(action, completionBlock: nil) }
}

/// The queues and managed entities of a connect.
final class ActionEngine: Sendable {
    let notifier = ActionNotifier()
    let generic = ActionQueue(label: "generic", width: 5)
    private struct State {
        /// Managed entity name → uniqueness attributes; nil while not started.
        var managed: [String: [String]]?
        var queues: [String: ActionQueue] = [:]
        var suspended = false
    }
    private let state = LockedValue(State())

    var managedEntities: [String: [String]] { state.withLock { $0.managed ?? [:] } }

    func manage(_ model: ManagedObjectModel) {
        let managed = ManagedEntities.all(in: model)
        state.withLock { s in
            s.managed = managed
            for name in managed.keys where s.queues[name] == nil {
                let q = ActionQueue(label: "entity.\(name)", width: 1)
                q.setSuspended(s.suspended)
                s.queues[name] = q
            }
        }
    }

    /// The serial queue of a managed entity, with its uniqueness attributes.
    func queue(for entity: String) -> (ActionQueue, [String: [String]])? {
        state.withLock { s in
            guard let managed = s.managed, managed[entity] != nil, let q = s.queues[entity] else { return nil }
            return (q, managed)
        }
    }

    func setSuspended(_ suspended: Bool) {
        let queues = state.withLock { s -> [ActionQueue] in
            s.suspended = suspended
            return Array(s.queues.values)
        }
        generic.setSuspended(suspended)
        for q in queues { q.setSuspended(suspended) }
    }

    /// Cancels actions that have not started, waits for running ones, unmanages entities.
    func stop() {
        let queues =
            state.withLock { s -> [ActionQueue] in
                s.managed = nil
                return Array(s.queues.values)
            } + [generic]
        for q in queues {
            for proxy in q.pendingProxies { proxy.cancel() }
        }
        for q in queues { q.waitUntilIdle() }
    }

    /// For a connect that is going away: cancels the actions that have not started (their
    /// proxies end canceled), without waiting for running ones, and ends the `actionEvents`
    /// streams once the cancelled actions' events are in them.
    func release() {
        let queues = state.withLock { Array($0.queues.values) } + [generic]
        let cancelled = queues.flatMap(\.pendingProxies)
        for proxy in cancelled { proxy.cancel() }
        let notifier = self.notifier
        DispatchQueue.global().async {
            for proxy in cancelled { proxy.waitUntilFinished() }
            notifier.finishStreams()
        }
    }
}

extension GenericConnect: ActionManager {
    public var maxConcurrentGenericActions: Int {
        get { actionEngine.generic.width }
        set { actionEngine.generic.width = newValue }
    }

    public var actionEvents: AsyncStream<ActionEvent> {
        actionEngine.notifier.setOwner(self)
        return actionEngine.notifier.stream()
    }

    /// The managed entities and their uniqueness attributes (empty until `start()`).
    public var managedEntities: [String: [String]] { actionEngine.managedEntities }

    private func makeProxy(_ action: any Action, _ completion: (@Sendable (ActionProxy) -> Void)?) -> ActionProxy {
        actionEngine.notifier.setOwner(self)
        return ActionProxy(action: action, completion: completion, notifier: actionEngine.notifier)
    }

    @discardableResult
    public func execute<A: GenericAction>(_ action: A, completionBlock: (@Sendable (ActionProxy) -> Void)?) throws -> ActionProxy {
        let proxy = makeProxy(action, completionBlock)
        actionEngine.generic.enqueue(
            ActionQueue.Job(proxy: proxy) { done in
                guard proxy.begin() else { done(); return }
                var failure: (any Error)?
                do { try action.execute() } catch { failure = error }
                proxy.finish(error: failure)
                done()
            })
        return proxy
    }

    @discardableResult
    public func execute<A: AsyncGenericAction>(_ action: A, completionBlock: (@Sendable (ActionProxy) -> Void)?) throws -> ActionProxy {
        let proxy = makeProxy(action, completionBlock)
        actionEngine.generic.enqueue(
            ActionQueue.Job(proxy: proxy) { done in
                guard proxy.begin() else { done(); return }
                proxy.runTask {
                    var failure: (any Error)?
                    do { try await action.execute() } catch { failure = error }
                    proxy.finish(error: failure)
                    done()
                }
            })
        return proxy
    }

    /// The queue and uniqueness attributes for an entity action's entity, or the
    /// `unmanagedEntity` error.
    private func entityQueue<T: ManagedObject>(for type: T.Type) throws -> (ActionQueue, [String: [String]], String) {
        let name = managedObjectModel.entity(for: T.self)?.name ?? T.entityName
        guard isStarted, let (queue, managed) = actionEngine.queue(for: name) else {
            throw ActionError.unmanagedEntity("Entity '\(name)' not managed by Connect")
        }
        return (queue, managed, name)
    }

    @discardableResult
    public func execute<A: EntityAction>(_ action: A, completionBlock: (@Sendable (ActionProxy) -> Void)?) throws -> ActionProxy {
        try enqueueEntityJob(action, for: A.ManagedObjectType.self, completionBlock) { proxy, context, done in
            var failure: (any Error)?
            do { try action.execute(context: context) } catch { failure = error }
            if failure == nil { proxy.record(context.performAndWait { context.statistics }) }
            proxy.finish(error: failure)
            done()
        }
    }

    @discardableResult
    public func execute<A: AsyncEntityAction>(_ action: A, completionBlock: (@Sendable (ActionProxy) -> Void)?) throws -> ActionProxy {
        try enqueueEntityJob(action, for: A.ManagedObjectType.self, completionBlock) { proxy, context, done in
            proxy.runTask {
                var failure: (any Error)?
                do { try await action.execute(context: context) } catch { failure = error }
                if failure == nil { proxy.record(await context.perform { context.statistics }) }
                proxy.finish(error: failure)
                done()
            }
        }
    }

    /// Queues an entity action on its entity's queue: when its turn comes, `run` gets its proxy
    /// (begun), a new action context and the job's `done` (which `run` calls when the action
    /// ends).
    private func enqueueEntityJob<T: ManagedObject>(
        _ action: any Action, for type: T.Type, _ completionBlock: (@Sendable (ActionProxy) -> Void)?,
        run: @escaping @Sendable (ActionProxy, ActionContext, @escaping @Sendable () -> Void) -> Void
    ) throws -> ActionProxy {
        let (queue, managed, name) = try entityQueue(for: type)
        let proxy = makeProxy(action, completionBlock)
        queue.enqueue(
            ActionQueue.Job(proxy: proxy) { [weak self] done in
                // Weakly: a queued job must not keep a released connect alive. Its deinit
                // cancels the queued actions; one already taken off the queue ends the same way.
                guard let self else {
                    proxy.cancel()
                    done()
                    return
                }
                guard proxy.begin() else { done(); return }
                // The running action keeps the connect until it ends (an async one ends after
                // `run` returns): released meanwhile, it would detach the stores under the
                // action and drop the saves its strategy still had to write.
                let context = ActionContext(template: newBackgroundContext(), name: "action.\(name)", uniquenessAttributes: managed)
                run(proxy, context) { withExtendedLifetime(self) { done() } }
            })
        return proxy
    }
}
