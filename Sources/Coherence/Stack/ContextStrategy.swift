import Dispatch
import Foundation

/// How a container arranges its view context and background contexts. A strategy gets what
/// it needs — the coordinator and the container's error handler — and builds the contexts.
///
/// Write your own by conforming a final class to this protocol. A strategy whose saves are
/// written later, on another queue (as ``ContextStrategy/IndirectNested`` and
/// ``ContextStrategy/Mixed`` write the view context's saves from a root context), implements
/// ``waitForPendingSaves()`` and ``writingContexts`` so that detaching a store and stopping
/// never lose a save that returned.
public protocol ContextStrategyType: AnyObject, Sendable {
    /// Creates the strategy's contexts for `coordinator`. Errors raised while propagating
    /// changes go to `errorHandler`, called at once on the queue where the error happened.
    init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void)
    /// The main-queue context for UI-facing work.
    var viewContext: ManagedObjectContext { get }
    /// A new private-queue context for background work.
    func newBackgroundContext() -> ManagedObjectContext
    /// Waits until every save the strategy has accepted and not yet written (a root context
    /// writing the view context's changes, a view-context save queued by a background save)
    /// has been tried. Called before stores are detached, by `stop()`, and by
    /// ``GenericPersistentContainer/waitForPendingSaves()``; it may be called on any thread,
    /// the main thread included.
    func waitForPendingSaves()
    /// The contexts that write accepted saves to the stores later (a root context). After
    /// ``waitForPendingSaves()``, changes still in one of them are writes that failed: the
    /// container refuses to detach a store they would be written to.
    var writingContexts: [ManagedObjectContext] { get }
    /// Called after the container removed `store` from its coordinator: a strategy that opened
    /// the container's stores on a coordinator of its own closes its copy of `store` here, so
    /// that none of its contexts reads or writes a store that was detached.
    func didDetach(_ store: PersistentStore)
}

extension ContextStrategyType {
    /// Saves go straight to the stores: nothing to wait for.
    public func waitForPendingSaves() {}
    /// Saves go straight to the stores: none.
    public var writingContexts: [ManagedObjectContext] { [] }
    /// The contexts work on the container's coordinator: nothing to close.
    public func didDetach(_ store: PersistentStore) {}
}

/// Counts the parent saves a strategy's hooks have queued on one context and not yet run, so
/// that a drain on that context's own executor (the main thread, for the view context) can run
/// them at once instead of waiting for a queue it is blocking.
final class QueuedParentSaves: Sendable {
    private let count = LockedValue(0)

    func enqueued() { count.withLock { $0 += 1 } }
    /// Called when a queued save has finished (its changes are in the parent's parent, or it
    /// failed): until then a drain must wait for it.
    func finished() { count.withLock { $0 -= 1 } }
    var isEmpty: Bool { count.withLock { $0 == 0 } }

    /// Makes sure the saves queued on `context` so far have run: waits for its queue, or, on its
    /// own executor, saves it now (the queued block then finds nothing left to save).
    func drain(_ context: ManagedObjectContext, _ errorHandler: @Sendable (any Error) -> Void) {
        if context.isOnExecutor {
            guard !isEmpty else { return }
            do { try context.save() } catch { errorHandler(error) }
        } else if !isEmpty {
            context.performAndWait {}
        }
    }
}

/// The built-in context strategies: ``Direct``, ``DirectIndependent``, ``IndirectNested``, ``Mixed`` and
/// ``DualCoordinator``.
public enum ContextStrategy {
    /// View and background contexts on the coordinator; a background save is merged into the
    /// view context.
    ///
    /// ```
    ///  view (main) ─┐
    ///               ├─ coordinator ─ stores
    ///  background ──┘   (background saves merged into view)
    /// ```
    /// Choose it for simple apps: every save goes straight to the store, and the view context
    /// follows background work.
    public final class Direct: ContextStrategyType {
        public let viewContext: ManagedObjectContext
        let contexts: CoordinatorContexts

        public init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void) {
            contexts = CoordinatorContexts(persistentStoreCoordinator, viewMerges: true, errorHandler)
            viewContext = contexts.viewContext
        }

        public func newBackgroundContext() -> ManagedObjectContext { contexts.newBackgroundContext() }
    }

    /// The same wiring as ``Direct``, but the view context is never updated by background
    /// saves; new contexts read the saved data.
    ///
    /// ```
    ///  view (main) ─┐
    ///               ├─ coordinator ─ stores
    ///  background ──┘   (no propagation)
    /// ```
    /// Choose it when the UI refreshes on its own schedule (or re-fetches), and background
    /// imports must not disturb what it shows.
    public final class DirectIndependent: ContextStrategyType {
        public let viewContext: ManagedObjectContext
        let contexts: CoordinatorContexts

        public init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void) {
            contexts = CoordinatorContexts(persistentStoreCoordinator, viewMerges: false, errorHandler)
            viewContext = contexts.viewContext
        }

        public func newBackgroundContext() -> ManagedObjectContext { contexts.newBackgroundContext() }
    }

    /// A private root context on the coordinator, the view context its child, background
    /// contexts children of the view context. A background save reaches the store through the
    /// view context and the root context.
    ///
    /// ```
    ///  background → view (main) → root (private) → coordinator → stores
    /// ```
    /// Choose it when every change should pass through the view context first (the UI sees a
    /// background save before it is on disk). The store write runs on the root context's queue,
    /// never on the main actor.
    public final class IndirectNested: ContextStrategyType {
        public let viewContext: ManagedObjectContext
        /// The private context that writes to the store.
        public let rootContext: ManagedObjectContext
        let errorHandler: @Sendable (any Error) -> Void
        /// View-context saves queued by background saves.
        let viewSaves = QueuedParentSaves()

        public init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void) {
            self.errorHandler = errorHandler
            rootContext = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: persistentStoreCoordinator, name: "rootContext")
            rootContext.hooks.errorHandler = errorHandler
            viewContext = ManagedObjectContext(concurrencyType: .mainQueue, parent: rootContext, name: "viewContext")
            viewContext.hooks.errorHandler = errorHandler
            viewContext.hooks.didSave = ContextStrategy.saveParent(rootContext, errorHandler)
            viewContext.hooks.checksStoresOnSave = true
        }

        /// Runs the view-context saves that background saves queued, then waits for the root
        /// context's writes.
        public func waitForPendingSaves() {
            viewSaves.drain(viewContext, errorHandler)
            rootContext.performAndWait {}
        }

        /// The root context.
        public var writingContexts: [ManagedObjectContext] { [rootContext] }

        public func newBackgroundContext() -> ManagedObjectContext {
            let c = ManagedObjectContext(concurrencyType: .privateQueue, parent: viewContext, name: "background")
            c.hooks.errorHandler = errorHandler
            c.hooks.didSave = ContextStrategy.saveParent(viewContext, errorHandler, queued: viewSaves)
            c.hooks.checksStoresOnSave = true
            return c
        }
    }

    /// A private root context on the coordinator with the view context its child; background
    /// contexts on the coordinator. A background save goes straight to the store and is merged
    /// into the root and view contexts.
    ///
    /// ```
    ///  view (main) → root (private) ─┐
    ///                                ├─ coordinator ─ stores
    ///  background ───────────────────┘   (background saves merged into root, then view)
    /// ```
    /// Choose it for most apps: background imports write directly, the UI follows them, and the
    /// view context's own saves are written by the root context off the main actor.
    public final class Mixed: ContextStrategyType {
        public let viewContext: ManagedObjectContext
        /// The private context that writes the view context's changes to the store.
        public let rootContext: ManagedObjectContext
        let coordinator: PersistentStoreCoordinator
        let errorHandler: @Sendable (any Error) -> Void

        public init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void) {
            coordinator = persistentStoreCoordinator
            self.errorHandler = errorHandler
            rootContext = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "rootContext")
            rootContext.automaticallyMergesChangesFromParent = true
            // A view-context save queued before a background save's merge must not fail on the
            // rows that save moved on (see RootWriterMergePolicy).
            rootContext.mergePolicy = RootWriterMergePolicy()
            rootContext.hooks.errorHandler = errorHandler
            viewContext = ManagedObjectContext(concurrencyType: .mainQueue, parent: rootContext, name: "viewContext")
            viewContext.automaticallyMergesChangesFromParent = true
            viewContext.hooks.errorHandler = errorHandler
            viewContext.hooks.didSave = ContextStrategy.saveParent(rootContext, errorHandler)
            viewContext.hooks.checksStoresOnSave = true
        }

        /// Waits for the root context's writes (and the merges queued before them).
        public func waitForPendingSaves() { rootContext.performAndWait {} }

        /// The root context.
        public var writingContexts: [ManagedObjectContext] { [rootContext] }

        public func newBackgroundContext() -> ManagedObjectContext {
            ContextStrategy.backgroundContext(on: coordinator, errorHandler)
        }
    }

    /// The wiring ``Direct`` and ``DirectIndependent`` share: a main-queue view context and
    /// private-queue background contexts, all on the coordinator. They differ only in whether
    /// background saves are merged into the view context.
    struct CoordinatorContexts: Sendable {
        let viewContext: ManagedObjectContext
        let coordinator: PersistentStoreCoordinator
        let errorHandler: @Sendable (any Error) -> Void

        init(_ coordinator: PersistentStoreCoordinator, viewMerges: Bool, _ errorHandler: @escaping @Sendable (any Error) -> Void) {
            self.coordinator = coordinator
            self.errorHandler = errorHandler
            viewContext = ContextStrategy.viewContext(on: coordinator, merges: viewMerges, errorHandler)
        }

        func newBackgroundContext() -> ManagedObjectContext {
            ContextStrategy.backgroundContext(on: coordinator, errorHandler)
        }
    }

    /// A main-queue view context on the coordinator.
    static func viewContext(
        on coordinator: PersistentStoreCoordinator, merges: Bool,
        _ errorHandler: @escaping @Sendable (any Error) -> Void
    ) -> ManagedObjectContext {
        let c = ManagedObjectContext(concurrencyType: .mainQueue, coordinator: coordinator, name: "viewContext")
        c.automaticallyMergesChangesFromParent = merges
        c.hooks.errorHandler = errorHandler
        return c
    }

    /// A private-queue background context on the coordinator.
    static func backgroundContext(
        on coordinator: PersistentStoreCoordinator,
        _ errorHandler: @escaping @Sendable (any Error) -> Void
    ) -> ManagedObjectContext {
        let c = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "background")
        c.hooks.errorHandler = errorHandler
        return c
    }

    /// A did-save hook that saves `parent` on its own queue, reporting failures (a failed save
    /// leaves its changes in `parent`). `queued` counts the saves not yet run.
    static func saveParent(
        _ parent: ManagedObjectContext, _ errorHandler: @escaping @Sendable (any Error) -> Void,
        queued: QueuedParentSaves? = nil
    ) -> @Sendable (ContextEvent) -> Void {
        { [weak parent] _ in
            guard let parent else { return }
            queued?.enqueued()
            parent.perform {
                // Counted until the save is over: a drain that found the count at zero while
                // this save was still pushing into the root context would let a detach remove
                // the store before the root wrote (a lost save).
                defer { queued?.finished() }
                do { try parent.save() } catch { errorHandler(error) }
            }
        }
    }
}
