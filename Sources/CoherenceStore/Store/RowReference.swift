/// A reference to another object in a row being written: resolved to a primary key by the
/// store, after keys of objects inserted in the same save are allocated.
package struct RowReference: Sendable {
    /// The foreign-key slot.
    package var slot: Int
    /// The destination (nil: no destination).
    package var target: ObjectID?

    /// Creates one from its fields.
    package init(slot: Int, target: ObjectID?) {
        self.slot = slot
        self.target = target
    }
}
