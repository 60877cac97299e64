/// One store's part of a query generation: what a pinned context reads instead of the store's
/// latest state (a held read transaction for SQLite, the committed tables for the in-memory
/// store). Made by ``StoreEngine/openSnapshot()``; ``close()`` lets it go (more than once is
/// harmless), after which reads through it fail with `.invalidQueryGenerationToken`.
package protocol StoreSnapshot: AnyObject, Sendable {
    func close()
    /// Whether it was closed because its store was (the store was removed from the
    /// coordinator): a generation then reads that store, if attached again, as it is now.
    var isDetached: Bool { get }
}

extension StoreSnapshot {
    package var isDetached: Bool { false }
}
