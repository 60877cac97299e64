import Foundation

/// One object's change in a ``FetchedResultsDifference``.
///
/// ```swift
/// for change in snapshot.difference.objectChanges where change.type == .insert {
///     print("new row at", change.newIndexPath!)
/// }
/// ```
public struct FetchedResultsChange: Sendable, Hashable, CustomStringConvertible {
    /// What happened.
    public let type: FetchedResultsChangeType
    /// The object's ID (after the change; a deleted object's last ID).
    public let objectID: ObjectID
    /// Where the object was before the change (nil for an insert).
    public let indexPath: IndexPath?
    /// Where the object is after the change (nil for a delete).
    public let newIndexPath: IndexPath?

    /// Creates a change.
    public init(type: FetchedResultsChangeType, objectID: ObjectID, indexPath: IndexPath?, newIndexPath: IndexPath?) {
        self.type = type
        self.objectID = objectID
        self.indexPath = indexPath
        self.newIndexPath = newIndexPath
    }

    /// The type and the paths, for example `move [0, 3] → [1, 0]`.
    public var description: String {
        let from = indexPath.map { "\(Array($0))" } ?? "-"
        let to = newIndexPath.map { "\(Array($0))" } ?? "-"
        return "\(type) \(from) → \(to)"
    }
}
