/// One store's part of a query generation: what a pinned context reads instead of the store's
/// latest state (a held read transaction for SQLite, the committed tables for the in-memory
/// store). Made by ``StoreEngine/openSnapshot()``; ``close()`` lets it go (more than once is
/// harmless), after which reads through it fail with `.invalidQueryGenerationToken`.
package protocol StoreSnapshot: AnyObject, Sendable {
    func close()
}
