import Foundation

/// The validation lists of one entity, which a save takes once per run of objects of that
/// entity instead of once per object (each list read from the entity is a retain and a
/// release, atomic operations that cost more than the checks on an object without rules).
struct ValidationRules {
    /// The entity the lists are from (nil: none yet).
    private(set) var entity: EntityDescription?
    /// Slots of the stored attributes that must not be nil.
    private(set) var required: [Int] = []
    /// Stored attributes with range, length or pattern rules.
    private(set) var ruled: [AttributeDescription] = []
    /// Relationships with count bounds, and required to-one relationships.
    private(set) var constrained: [RelationshipDescription] = []

    /// Takes `entity`'s lists, unless they are the ones held.
    @inline(__always)
    mutating func take(_ entity: EntityDescription) {
        guard entity !== self.entity else { return }
        self.entity = entity
        required = entity.requiredAttributeSlots
        ruled = entity.ruledAttributes
        constrained = entity.constrainedRelationships
    }
}
