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
