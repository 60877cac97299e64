import Foundation

/// One change handed to an observer hook (PersistentHistoryTrackingKit 2's `HookContext`).
///
/// ```swift
/// await kit.registerObserver(entityName: "Note", operation: .delete) { changes in
///     for change in changes { print("deleted", change.tombstone?.attributes["title"] ?? "?", "by", change.author) }
/// }
/// ```
public struct HookContext: Sendable, Hashable {
    /// The changed object's entity (`"Unknown"` when the model does not know it).
    public let entityName: String
    /// Insert, update or delete.
    public let operation: HookOperation
    /// The changed object.
    public let objectID: ObjectID
    /// The object's URI (``ObjectID/uriRepresentation()``).
    public let objectIDURL: URL
    /// For a delete, what history kept of the object; nil for inserts and updates.
    public let tombstone: Tombstone?
    /// When the transaction was written.
    public let timestamp: Date
    /// The transaction's author (`"Unknown"` when it had none).
    public let author: String

    /// Creates a change.
    public init(
        entityName: String, operation: HookOperation, objectID: ObjectID, objectIDURL: URL, tombstone: Tombstone?, timestamp: Date,
        author: String
    ) {
        self.entityName = entityName
        self.operation = operation
        self.objectID = objectID
        self.objectIDURL = objectIDURL
        self.tombstone = tombstone
        self.timestamp = timestamp
        self.author = author
    }
}

/// Called with the changes of one entity and operation of one transaction, in order.
public typealias HookCallback = @Sendable ([HookContext]) async -> Void
