/// A change to a join table (many-to-many or to-many without inverse).
package struct JoinChange: Sendable {
    /// The relationship, from the side whose objects are `source`.
    package var relationship: RelationshipDescription
    package var source: ObjectID
    package var destination: ObjectID

    /// Creates one from its fields.
    package init(relationship: RelationshipDescription, source: ObjectID, destination: ObjectID) {
        self.relationship = relationship
        self.source = source
        self.destination = destination
    }
}
