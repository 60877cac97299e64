import Foundation

/// Builds entity descriptions from typed ``ManagedObject`` subclasses.
enum ModelReflection {
    /// A placeholder entity for probe objects created before their real entity exists.
    static let placeholderEntity = EntityDescription(name: "_CoherenceProbe", properties: [])

    /// The superclass of `type` if it is a typed subclass (not `ManagedObject` itself).
    static func typedSuperclass(of type: ManagedObject.Type) -> ManagedObject.Type? {
        let probe = type.init(entity: placeholderEntity)
        guard let sup = Mirror(reflecting: probe).superclassMirror?.subjectType as? ManagedObject.Type,
              sup != ManagedObject.self else { return nil }
        return sup
    }
}

extension EntityDescription {
    /// Reflects a typed ``ManagedObject`` subclass: each ``Attribute`` and ``Relationship``
    /// property declared by the class itself becomes a property; a typed superclass becomes the
    /// superentity.
    ///
    /// ```swift
    /// let entity = try EntityDescription(reflecting: Person.self)
    /// ```
    public convenience init(reflecting type: ManagedObject.Type) throws(ModelError) {
        let probe = type.init(entity: ModelReflection.placeholderEntity)
        let mirror = Mirror(reflecting: probe)
        var properties: [PropertyDescription] = []
        var constraints: [[String]] = []
        var indexes: [[String]] = []
        for child in mirror.children {
            guard let label = child.label, let wrapper = child.value as? ReflectedProperty else { continue }
            guard label.hasPrefix("_"), label.count > 1 else {
                throw ModelError(.invalidName, entity: type.entityName, property: label,
                                 "Property wrapper storage '\(label)' does not follow the `_name` pattern.")
            }
            let name = String(label.dropFirst())
            properties.append(wrapper.makeDescription(name: name))
            if wrapper.isUnique { constraints.append([name]) }
            if wrapper.isIndexed { indexes.append([name]) }
        }
        let sup = ModelReflection.typedSuperclass(of: type)
        // Class-level settings are inherited by Swift subclasses; only take what differs from the
        // superclass so a constraint is declared once, on the entity that introduced it.
        let ownConstraints = type.uniquenessConstraints.filter { c in !(sup?.uniquenessConstraints.contains(c) ?? false) }
        let ownIndexes = type.indexes.filter { i in !(sup?.indexes.contains(i) ?? false) }
        self.init(name: type.entityName, managedObjectClass: type, isAbstract: type.isAbstractEntity,
                  superentity: sup?.entityName, properties: properties,
                  uniquenessConstraints: ownConstraints + constraints, indexes: ownIndexes + indexes,
                  userInfo: type.entityUserInfo)
    }
}

/// Resolves key paths of typed subclasses (`\Person.name`) to properties by reading them once
/// on a probe object whose property wrappers record the slot they were asked for.
@usableFromInline
package enum KeyPathProbe {
    /// Records the slot of the property a probe's wrapper was read for.
    @usableFromInline
    package final class Recorder {
        var touchedSlot: Int?
        /// Records the slot of the property a probe's wrapper was read for.
        @usableFromInline func record(_ slot: Int) { touchedSlot = slot }
    }

    static func resolve(_ keyPath: AnyKeyPath, in entity: EntityDescription) -> PropertyDescription? {
        let probe = entity.managedObjectClass.init(entity: entity)
        let recorder = Recorder()
        probe._probe = recorder
        // Reading through a key path whose root the probe is not returns nil and records nothing.
        _ = probe[keyPath: keyPath]
        guard let slot = recorder.touchedSlot, slot >= 0, slot < probe.entity.properties.count else { return nil }
        return probe.entity.properties[slot]
    }
}
