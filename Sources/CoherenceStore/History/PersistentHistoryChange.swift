import Foundation

/// One object's change in a ``PersistentHistoryTransaction``, as Core Data's
/// `NSPersistentHistoryChange`: which object, how, which properties, and what history keeps of
/// its values.
///
/// ```swift
/// for change in transaction.changes ?? [] where change.changeType == .update {
///     print(change.changedObjectID, change.updatedProperties ?? [])
///     if let old = change.oldValue(forKey: "score", as: Double.self) { print("score was", old) }
/// }
/// ```
///
/// Values are in stored form (``StoredValue``); `tombstoneValue(forKey:as:)`,
/// `oldValue(forKey:as:)` and `newValue(forKey:as:)` read them as Swift values.
public struct PersistentHistoryChange: Sendable, CustomStringConvertible {
    /// The object that changed (its permanent ID in the transaction's store).
    public let changedObjectID: ObjectID
    /// Insert, update or delete.
    public let changeType: PersistentHistoryChangeType
    /// For an update, the names of the properties it changed: attributes, to-one relationships,
    /// and many-to-many relationships (recorded on both sides). A to-many relationship kept in
    /// its destinations' foreign keys is recorded as a change of those destinations' to-one
    /// inverse. Nil for inserts and deletes, as in Core Data.
    public let updatedProperties: Set<String>?
    /// For a delete, the object's last stored values of the attributes history keeps on deletion:
    /// those of the entity's uniqueness constraints and those marked
    /// ``AttributeDescription/preservesValueInHistoryOnDeletion``. Nil for inserts and updates,
    /// and for deletes of entities with no such attribute.
    public let tombstone: [String: StoredValue]?
    /// For an update, the values before it of the changed attributes that record their values
    /// (``AttributeDescription/recordsValuesInHistory`` or
    /// ``EntityDescription/recordsValuesInHistory``); nil when none does.
    public let oldValues: [String: StoredValue]?
    /// For an update, the values after it of the same attributes as ``oldValues``.
    public let newValues: [String: StoredValue]?
    /// The token of the transaction the change belongs to.
    public let transactionToken: PersistentHistoryToken

    package init(
        changedObjectID: ObjectID, changeType: PersistentHistoryChangeType, updatedProperties: Set<String>?,
        tombstone: [String: StoredValue]?, oldValues: [String: StoredValue]?, newValues: [String: StoredValue]?,
        transactionToken: PersistentHistoryToken
    ) {
        self.changedObjectID = changedObjectID
        self.changeType = changeType
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
        self.oldValues = oldValues
        self.newValues = newValues
        self.transactionToken = transactionToken
    }

    /// A tombstone value as a Swift value (nil when it is not kept, is nil, or is not a `T`).
    ///
    /// ```swift
    /// let email = change.tombstoneValue(forKey: "email", as: String.self)
    /// ```
    public func tombstoneValue<T: PersistentValue>(forKey key: String, as type: T.Type = T.self) -> T? {
        tombstone?[key].flatMap { T(storedValue: $0) }
    }

    /// An updated attribute's value before the update, as a Swift value (nil when it is not
    /// recorded, was nil, or is not a `T`).
    public func oldValue<T: PersistentValue>(forKey key: String, as type: T.Type = T.self) -> T? {
        oldValues?[key].flatMap { T(storedValue: $0) }
    }

    /// An updated attribute's value after the update, as a Swift value (nil when it is not
    /// recorded, is nil, or is not a `T`).
    public func newValue<T: PersistentValue>(forKey key: String, as type: T.Type = T.self) -> T? {
        newValues?[key].flatMap { T(storedValue: $0) }
    }

    /// The change type and object, with the updated properties of an update.
    public var description: String {
        var s = "<PersistentHistoryChange \(changeType) \(changedObjectID)"
        if let updatedProperties { s += " " + updatedProperties.sorted().joined(separator: ", ") }
        return s + ">"
    }
}
