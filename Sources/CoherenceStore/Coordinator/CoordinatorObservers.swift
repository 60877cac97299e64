import Synchronization

/// Receives the saves made through a coordinator (contexts that merge other contexts' saves
/// subscribe with ``PersistentStoreCoordinator/subscribe(_:)``).
package protocol CoordinatorObserver: AnyObject, Sendable {
    /// A context of the coordinator saved `event` into its stores; `source` is that context.
    /// Called on the saving context's thread: hand the work to your own queue.
    func coordinatorDidSave(_ event: ContextEvent, from source: AnyObject)
}

/// The observers of one coordinator, each held weakly.
package final class CoordinatorObservers: Sendable {
    private struct Entry: @unchecked Sendable {
        // @unchecked Sendable: a weak reference to a Sendable class.
        weak var observer: (any CoordinatorObserver)?
    }
    private let entries = LockedValue<[Entry]>([])
    /// Whether anyone ever subscribed: until then a save skips the scan (which loads a weak
    /// reference per observer).
    private let someSubscribed = Atomic<Bool>(false)

    package init() {}

    /// Adds an observer (once, however often it subscribes).
    package func subscribe(_ observer: any CoordinatorObserver) {
        entries.withLock { list in
            list.removeAll { $0.observer == nil }
            if !list.contains(where: { $0.observer === observer }) { list.append(Entry(observer: observer)) }
        }
        someSubscribed.store(true, ordering: .releasing)
    }

    /// The live observers, except `source`.
    package func observers(except source: AnyObject) -> [any CoordinatorObserver] {
        guard someSubscribed.load(ordering: .acquiring) else { return [] }
        return entries.withLock { list in list.compactMap { e in e.observer.flatMap { $0 === source ? nil : $0 } } }
    }
}
