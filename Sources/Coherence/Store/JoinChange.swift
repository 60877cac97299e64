/// A change to a join table (many-to-many or to-many without inverse).
package struct JoinChange: Sendable {
    /// The relationship, from the side whose objects are `source`.
    package var relationship: RelationshipDescription
    package var source: ObjectID
    package var destination: ObjectID
}
