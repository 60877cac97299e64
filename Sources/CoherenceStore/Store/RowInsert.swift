/// An object inserted by a save.
package struct RowInsert: Sendable {
    /// The object's ID (temporary, or permanent when obtained earlier).
    package var objectID: ObjectID
    /// Values by slot (foreign-key slots are filled from `references`).
    package var values: [StoredValue]
    /// Foreign keys to resolve.
    package var references: [RowReference]

    /// Creates one from its fields.
    package init(objectID: ObjectID, values: [StoredValue], references: [RowReference]) {
        self.objectID = objectID
        self.values = values
        self.references = references
    }
}
