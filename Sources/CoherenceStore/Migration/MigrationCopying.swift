import Foundation

/// A copy of a store that a staged migration works on, so that the store itself changes only
/// once every stage succeeded: a SQLite file next to the store (``MigrationCopy``), or a
/// PostgreSQL schema next to the store's. ``replaceOriginal()`` puts the finished copy in the
/// store's place in one atomic step; ``discard()`` drops it and the store was never written.
package protocol MigrationCopying {
    /// Where the copy is: a store URL of the same type, to add the copy at.
    var url: URL { get }
    /// Puts the copy in the store's place, atomically.
    /// - Throws: `.migrationFailed` (the store is left at its old version, the copy discarded).
    func replaceOriginal() throws(CoherenceError)
    /// Drops the copy (nothing when there is none).
    func discard()
}

extension MigrationCopy: MigrationCopying {}

extension StoreType {
    /// A copy of the store of this type at `url` for a staged migration (a SQLite file's, or
    /// the store engine's own).
    /// - Throws: `.migrationFailed` when the store cannot be copied; `.invalidRequest` for a
    ///   type whose stores are not migrated (in memory).
    package func makeMigrationCopy(of url: URL) throws(CoherenceError) -> any MigrationCopying {
        if let factory { return try factory.makeMigrationCopy(of: url) }
        guard self == .sqlite else { throw CoherenceError(.invalidRequest, "\(self) stores are not migrated.") }
        return try MigrationCopy.make(of: url)
    }

    /// How errors name the store at `url`: a file's path, or a server store's URL without its
    /// password.
    package func location(of url: URL) -> String {
        factory.map { $0.publicURL(for: url)?.absoluteString ?? "" } ?? url.path
    }
}
