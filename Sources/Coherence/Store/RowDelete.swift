/// An object deleted by a save.
package struct RowDelete: Sendable {
    package var objectID: ObjectID
    /// The version the object was loaded at; nil deletes without a version check.
    package var expectedVersion: Int64?
    /// The object's values (reported in conflicts).
    package var values: [StoredValue]
}
