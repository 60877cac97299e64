import Foundation

/// How an object or a section of a ``FetchedResultsController``'s results changed (Core Data's
/// `NSFetchedResultsChangeType`).
public enum FetchedResultsChangeType: Int, Sendable, Hashable, CustomStringConvertible {
    /// The object (or section) appeared: it has a new index path only.
    case insert = 1
    /// The object (or section) left: it has an old index path only.
    case delete = 2
    /// The object changed and its place among the other results changed: it has both paths.
    case move = 3
    /// The object changed but kept its place among the other results: it has both paths (the
    /// old one counts positions before the change, the new one after).
    case update = 4

    /// `insert`, `delete`, `move` or `update`.
    public var description: String {
        switch self {
        case .insert: return "insert"
        case .delete: return "delete"
        case .move: return "move"
        case .update: return "update"
        }
    }
}
