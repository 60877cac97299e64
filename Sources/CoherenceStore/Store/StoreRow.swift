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

/// What a fetch hands each row to as it reads it (see ``StoreEngine/fetch(_:expecting:each:)``):
/// the object's ID (of the row's concrete entity, in the store that read it), the row version
/// and the values by slot, as in ``StoreRow/values``. The ID and the values are consumed, so the
/// receiver can move both into an object; the ID holds the row's only reference to the entity.
package typealias RowReceiver = (_ id: consuming ObjectID, _ version: Int64, _ values: consuming [StoredValue]) -> Void
