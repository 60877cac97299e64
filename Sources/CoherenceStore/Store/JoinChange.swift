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

/// The places of destinations of an ordered to-many relationship kept in the destinations'
/// foreign keys (``RelationshipDescription/keepsOrderInDestinations``), written after the
/// save's inserts and updates (so inserted destinations have their keys and every destination
/// names its source).
package struct OrderChange: Sendable {
    /// The ordered relationship, from the side whose object is `source`.
    package var relationship: RelationshipDescription
    package var source: ObjectID
    /// The destinations, in order.
    package var destinations: [ObjectID]
    /// Whether `destinations` go after the source's other destinations (in that order) rather
    /// than being its whole list (places 0, 1, …).
    package var appends: Bool

    /// Creates one from its fields.
    package init(relationship: RelationshipDescription, source: ObjectID, destinations: [ObjectID], appends: Bool) {
        self.relationship = relationship
        self.source = source
        self.destinations = destinations
        self.appends = appends
    }
}
