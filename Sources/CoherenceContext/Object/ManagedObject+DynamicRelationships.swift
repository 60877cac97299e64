import CoherenceStore

/// Relationships read and set by name (`value(forKey:)`, `setValue(_:forKey:)`), for code that
/// has no typed class: migration handlers working on an older model version, generic tools.
extension ManagedObject {
    /// A relationship's destinations as the dynamic API gives them: the object (or nil) for a
    /// to-one relationship, an array for a to-many one.
    func _dynamicValue(of relationship: RelationshipDescription) -> Any? {
        if relationship.isToMany { return _toMany(relationship) }
        return _toOne(relationship)
    }

    /// Checks and sets a relationship's destinations by name.
    func _setDynamicValue(_ value: Any?, of relationship: RelationshipDescription) throws(CoherenceError) {
        let destinations: [ManagedObject]
        switch value {
        case nil: destinations = []
        case let object as ManagedObject where !relationship.isToMany: destinations = [object]
        case let objects as [ManagedObject] where relationship.isToMany: destinations = objects
        case let objects as Set<ManagedObject> where relationship.isToMany: destinations = Array(objects)
        default:
            let expected = relationship.isToMany ? "[ManagedObject] or Set<ManagedObject>" : "a ManagedObject"
            throw CoherenceError(
                .typeMismatch,
                "A value of type \(value.map { "\(type(of: $0))" } ?? "nil") cannot be set on relationship '\(relationship.name)' (expects \(expected)).",
                entity: entity.name, property: relationship.name, objectID: _objectID)
        }
        for destination in destinations {
            guard let expected = relationship.destinationEntity, Self.entity(destination.entity, isKindOf: expected) else {
                throw CoherenceError(
                    .typeMismatch,
                    "An object of entity '\(destination.entity.name)' cannot be a destination of '\(relationship.name)' (entity '\(relationship.destinationEntityName)').",
                    entity: entity.name, property: relationship.name, objectID: _objectID)
            }
            if let context = _context, let other = destination._context, other !== context {
                throw CoherenceError(
                    .contextMismatch,
                    "\(destination.objectID) is in another context than \(objectID); relate objects of one context.",
                    entity: entity.name, property: relationship.name, objectID: _objectID)
            }
        }
        if relationship.isToMany {
            _setToMany(relationship, destinations)
        } else {
            _setToOne(relationship, destinations.first)
        }
    }

    /// Whether `entity` is `expected` or one of its sub-entities.
    private static func entity(_ entity: EntityDescription, isKindOf expected: EntityDescription) -> Bool {
        var current: EntityDescription? = entity
        while let e = current {
            if e === expected { return true }
            current = e.superentity
        }
        return false
    }
}
