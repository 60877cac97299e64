import Dispatch
import Foundation

/// How a container arranges its view context and background contexts. A strategy gets what
/// it needs — the coordinator and the container's error handler — and builds the contexts.
///
/// Write your own by conforming a final class to this protocol.
public protocol ContextStrategyType: AnyObject, Sendable {
    /// Creates the strategy's contexts for `coordinator`. Errors raised while propagating
    /// changes go to `errorHandler` (called on a global queue).
    init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void)
    /// The main-queue context for UI-facing work.
    var viewContext: ManagedObjectContext { get }
    /// A new private-queue context for background work.
    func newBackgroundContext() -> ManagedObjectContext
    /// Waits until saves the strategy started on its own (for example a root context writing
    /// the view context's changes) have finished. Called by `stop()` before stores are detached.
    func waitForPendingSaves()
}

extension ContextStrategyType {
    public func waitForPendingSaves() {}
}

/// Waits for work queued on the view context (unless called from it) and then on the root context.
private func drain(view: ManagedObjectContext, root: ManagedObjectContext) {
    if !view.isOnExecutor { view.performAndWait {} }
    root.performAndWait {}
}

/// The four built-in context strategies.
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
        let coordinator: PersistentStoreCoordinator
        let errorHandler: @Sendable (any Error) -> Void

        public init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void) {
            coordinator = persistentStoreCoordinator
            self.errorHandler = errorHandler
            viewContext = ContextStrategy.viewContext(on: coordinator, merges: true, errorHandler)
        }

        public func newBackgroundContext() -> ManagedObjectContext {
            ContextStrategy.backgroundContext(on: coordinator, errorHandler)
        }
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
        let coordinator: PersistentStoreCoordinator
        let errorHandler: @Sendable (any Error) -> Void

        public init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void) {
            coordinator = persistentStoreCoordinator
            self.errorHandler = errorHandler
            viewContext = ContextStrategy.viewContext(on: coordinator, merges: false, errorHandler)
        }

        public func newBackgroundContext() -> ManagedObjectContext {
            ContextStrategy.backgroundContext(on: coordinator, errorHandler)
        }
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

        public init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void) {
            self.errorHandler = errorHandler
            rootContext = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: persistentStoreCoordinator, name: "rootContext")
            rootContext.hooks.errorHandler = errorHandler
            viewContext = ManagedObjectContext(concurrencyType: .mainQueue, parent: rootContext, name: "viewContext")
            viewContext.hooks.errorHandler = errorHandler
            viewContext.hooks.didSave = ContextStrategy.saveParent(rootContext, errorHandler)
        }

        public func waitForPendingSaves() { drain(view: viewContext, root: rootContext) }

        public func newBackgroundContext() -> ManagedObjectContext {
            let c = ManagedObjectContext(concurrencyType: .privateQueue, parent: viewContext, name: "background")
            c.hooks.errorHandler = errorHandler
            c.hooks.didSave = ContextStrategy.saveParent(viewContext, errorHandler)
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
            rootContext.hooks.errorHandler = errorHandler
            viewContext = ManagedObjectContext(concurrencyType: .mainQueue, parent: rootContext, name: "viewContext")
            viewContext.automaticallyMergesChangesFromParent = true
            viewContext.hooks.errorHandler = errorHandler
            viewContext.hooks.didSave = ContextStrategy.saveParent(rootContext, errorHandler)
        }

        public func waitForPendingSaves() { drain(view: viewContext, root: rootContext) }

        public func newBackgroundContext() -> ManagedObjectContext {
            ContextStrategy.backgroundContext(on: coordinator, errorHandler)
        }
    }

    /// A main-queue view context on the coordinator.
    static func viewContext(on coordinator: PersistentStoreCoordinator, merges: Bool,
                            _ errorHandler: @escaping @Sendable (any Error) -> Void) -> ManagedObjectContext {
        let c = ManagedObjectContext(concurrencyType: .mainQueue, coordinator: coordinator, name: "viewContext")
        c.automaticallyMergesChangesFromParent = merges
        c.hooks.errorHandler = errorHandler
        return c
    }

    /// A private-queue background context on the coordinator.
    static func backgroundContext(on coordinator: PersistentStoreCoordinator,
                                  _ errorHandler: @escaping @Sendable (any Error) -> Void) -> ManagedObjectContext {
        let c = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "background")
        c.hooks.errorHandler = errorHandler
        return c
    }

    /// A did-save hook that saves `parent` on its own queue, reporting failures.
    static func saveParent(_ parent: ManagedObjectContext, _ errorHandler: @escaping @Sendable (any Error) -> Void)
        -> @Sendable (ContextEvent) -> Void {
        { [weak parent] _ in
            guard let parent else { return }
            parent.perform {
                do { try parent.save() } catch { DispatchQueue.global().async { errorHandler(error) } }
            }
        }
    }
}
