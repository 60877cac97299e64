/// A strategy that opens the container's stores on a coordinator of its own (the
/// dual-coordinator one): the container tells it of each store it attaches, so that contexts
/// already made on that coordinator read and write the store at once, as they stop at once when
/// it is detached (``ContextStrategyType/didDetach(_:)``).
protocol StoreAttachFollowing: ContextStrategyType {
    /// Called after the container added `store` to its coordinator.
    func didAttach(_ store: PersistentStore)
}
