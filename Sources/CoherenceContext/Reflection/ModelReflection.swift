import Foundation
import Synchronization

/// Builds entity descriptions from typed ``ManagedObject`` subclasses.
package enum ModelReflection {
    /// A placeholder entity for probe objects created before their real entity exists.
    static let placeholderEntity = EntityDescription(name: "_CoherenceProbe", properties: [])

    /// The superclass of `type` if it is a typed subclass (not `ManagedObject` itself).
    static func typedSuperclass(of type: ManagedObject.Type) -> ManagedObject.Type? {
        let probe = type.init(entity: placeholderEntity)
        guard let sup = Mirror(reflecting: probe).superclassMirror?.subjectType as? ManagedObject.Type,
            sup != ManagedObject.self
        else { return nil }
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
        // The probe's wrappers record their declarations (each keeps a token to its own).
        let (probe, declarations) = WrapperRecording.recording { type.init(entity: ModelReflection.placeholderEntity) }
        let mirror = Mirror(reflecting: probe)
        var properties: [PropertyDescription] = []
        var constraints: [[String]] = []
        var indexes: [[String]] = []
        for child in mirror.children {
            guard let label = child.label, let slotted = child.value as? any SlottedPropertyWrapper else { continue }
            guard label.hasPrefix("_"), label.count > 1 else {
                throw ModelError(
                    .invalidName, entity: type.entityName, property: label,
                    "Property wrapper storage '\(label)' does not follow the `_name` pattern.")
            }
            let name = String(label.dropFirst())
            guard let wrapper = WrapperRecording.declaration(token: slotted.slot, in: declarations) else {
                throw ModelError(
                    .classMismatch, entity: type.entityName, property: name,
                    "The declaration of property '\(name)' of class '\(type)' could not be read: its wrapper was not made by the class's initializer."
                )
            }
            properties.append(wrapper.makeDescription(name: name))
            if wrapper.isUnique { constraints.append([name]) }
            if wrapper.isIndexed { indexes.append([name]) }
        }
        let sup = ModelReflection.typedSuperclass(of: type)
        // Class-level settings are inherited by Swift subclasses; only take what differs from the
        // superclass so a constraint is declared once, on the entity that introduced it.
        let ownConstraints = type.uniquenessConstraints.filter { c in !(sup?.uniquenessConstraints.contains(c) ?? false) }
        let ownIndexes = type.indexes.filter { i in !(sup?.indexes.contains(i) ?? false) }
        self.init(
            name: type.entityName, managedObjectClass: type, isAbstract: type.isAbstractEntity,
            superentity: sup?.entityName, properties: properties,
            uniquenessConstraints: ownConstraints + constraints, indexes: ownIndexes + indexes,
            userInfo: type.entityUserInfo, recordsValuesInHistory: type.recordsValuesInHistory)
    }
}

/// Records property wrapper declarations while a class is reflected.
///
/// A wrapper keeps only its slot in each object. Its declaration (options, default value,
/// validation rules, inverse, delete rule) is needed once, to build the model: while a probe of
/// the class is made inside ``recording(_:)``, each wrapper's initializer hands its declaration
/// here and keeps a token to it in its slot field. The tokens number the wrappers in the order
/// the class initializes them; making the class's slot template replays that order, handing each
/// wrapper the slot of its place instead (``recording(replaying:_:)``, see `SlotPlan`).
/// Everywhere else, a wrapper's initializer costs one relaxed atomic load.
@usableFromInline
package enum WrapperRecording {
    /// Reflections in progress in the process, on any thread.
    @usableFromInline static let active = Atomic<Int>(0)
    /// The declarations recorded on this thread, while it reflects a class.
    @TaskLocal static var session: Session?

    // @unchecked Sendable: a session is filled only by the thread that set it (synchronously,
    // inside `recording`) and read after that thread's probe is made.
    final class Session: @unchecked Sendable {
        var declarations: [any ReflectedProperty] = []
        /// When set, what each wrapper keeps, by its place in the initialization order, instead of
        /// a token.
        let replayed: [Int16]?
        init(replaying replayed: [Int16]? = nil) { self.replayed = replayed }
    }

    /// Whether some thread is reflecting a class (then ``record(_:)`` checks whether it is this one).
    @inlinable static var isActive: Bool { active.load(ordering: .relaxed) != 0 }

    /// Records a wrapper's declaration when this thread is reflecting; returns what the wrapper
    /// keeps in its slot field: a token (-2, -3, …) for the declaration, or -1 (also past the
    /// 32,767th wrapper of a class, which reflection then reports as a property it cannot read).
    @usableFromInline
    static func record(_ declaration: some ReflectedProperty) -> Int16 {
        guard let session else { return -1 }
        let place = session.declarations.count
        session.declarations.append(declaration)
        if let replayed = session.replayed { return place < replayed.count ? replayed[place] : -1 }
        return Int16(exactly: -2 - place) ?? -1
    }

    /// Runs `body` (which makes a probe object) with this thread recording declarations; with
    /// `replayed`, the wrappers keep those values by place instead of tokens.
    static func recording<T>(replaying replayed: [Int16]? = nil, _ body: () -> T) -> (T, [any ReflectedProperty]) {
        let session = Session(replaying: replayed)
        active.add(1, ordering: .relaxed)
        defer { active.subtract(1, ordering: .relaxed) }
        let result = $session.withValue(session) { body() }
        return (result, session.declarations)
    }

    /// The declaration a token names.
    static func declaration(token: Int, in declarations: [any ReflectedProperty]) -> (any ReflectedProperty)? {
        let index = -2 - token
        return index >= 0 && index < declarations.count ? declarations[index] : nil
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
        /// How many property reads the key path made (a stored property's: one).
        var reads = 0
        /// Records the slot of the property a probe's wrapper was read for.
        @usableFromInline func record(_ slot: Int) {
            touchedSlot = slot
            reads += 1
        }
        /// The slot the key path reads, when it read exactly one property: a computed property
        /// that reads several (`email ?? name`) is none of them.
        var onlySlot: Int? { reads == 1 ? touchedSlot : nil }
    }

    static func resolve(_ keyPath: AnyKeyPath, in entity: EntityDescription) -> PropertyDescription? {
        let probe = entity.managedObjectClass.init(entity: entity)
        let recorder = Recorder()
        probe._becomeProbe(recorder)
        // Reading through a key path whose root the probe is not returns nil and records nothing.
        _ = probe[keyPath: keyPath]
        guard let slot = recorder.onlySlot, slot >= 0, slot < probe.entity.properties.count else { return nil }
        return probe.entity.properties[slot]
    }
}
