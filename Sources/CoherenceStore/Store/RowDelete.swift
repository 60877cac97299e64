/// An object deleted by a save.
package struct RowDelete: Sendable {
    package var objectID: ObjectID
    /// The version the object was loaded at; nil deletes without a version check.
    package var expectedVersion: Int64?
    /// The object's values (reported in conflicts).
    package var values: [StoredValue]

    /// Creates one from its fields.
    package init(objectID: ObjectID, expectedVersion: Int64?, values: [StoredValue]) {
        self.objectID = objectID
        self.expectedVersion = expectedVersion
        self.values = values
    }
}
