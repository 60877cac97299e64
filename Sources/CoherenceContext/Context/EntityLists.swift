import Foundation

/// The lists of one entity that a save's passes read for each object (stored attribute
/// slots, validation rules, foreign-key relationships), taken once per run of objects of that entity instead of once per
/// object: each list read from the entity is a retain and a release, atomic operations that cost
/// more than the work on an object without rules.
struct EntityLists {
    /// The entity the lists are from (nil: none yet).
    private(set) var entity: EntityDescription?
    /// Whether each slot is a stored attribute's (indexed by slot).
    private(set) var isStoredAttributeSlot: [Bool] = []
    /// Slots of the stored attributes that must not be nil.
    private(set) var required: [Int] = []
    /// Stored attributes with range, length or pattern rules.
    private(set) var ruled: [AttributeDescription] = []
    /// Relationships with count bounds, and required to-one relationships.
    private(set) var constrained: [RelationshipDescription] = []
    /// Stored to-one relationships (foreign keys), in property order.
    private(set) var foreignKeys: [RelationshipDescription] = []

    /// Takes `entity`'s lists, unless they are the ones held.
    @inline(__always)
    mutating func take(_ entity: EntityDescription) {
        guard entity !== self.entity else { return }
        self.entity = entity
        isStoredAttributeSlot = entity.isStoredAttributeSlot
        required = entity.requiredAttributeSlots
        ruled = entity.ruledAttributes
        constrained = entity.constrainedRelationships
        foreignKeys = entity.foreignKeyRelationships
    }
}
