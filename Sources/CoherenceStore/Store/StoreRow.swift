/// A row read from a store: the object's concrete entity, key, version and values by slot.
package struct StoreRow: Sendable {
    /// The concrete entity of the row.
    package var entity: EntityDescription
    /// The primary key.
    package var primaryKey: Int64
    /// The row version (optimistic locking); starts at 1 and grows by one per update.
    package var version: Int64
    /// Values by property slot: stored attributes and foreign keys (as the destination's key);
    /// defaults for transient attributes; null for to-many relationships.
    package var values: [StoredValue]

    package init(entity: EntityDescription, primaryKey: Int64, version: Int64, values: [StoredValue]) {
        self.entity = entity
        self.primaryKey = primaryKey
        self.version = version
        self.values = values
    }
}

/// A row a fetch hands over as it reads it (see ``StoreEngine/fetch(_:expecting:each:)``): the
/// object's ID (of its concrete entity, in the store that read it), version and values by slot.
/// The ID, which the receiver keeps, holds the row's only reference to the entity.
package struct FetchedRow {
    /// The object's ID.
    package var id: ObjectID
    /// The row version.
    package var version: Int64
    /// Values by property slot, as in ``StoreRow/values``.
    package var values: [StoredValue]

    @inlinable @inline(__always)
    package init(id: ObjectID, version: Int64, values: [StoredValue]) {
        self.id = id
        self.version = version
        self.values = values
    }
}
