import Foundation

/// A Swift type that can hold a relationship's destinations: `Optional` of a managed object
/// class (to-one), `Set` of one (to-many) or `Array` of one (ordered to-many).
public protocol RelationshipValue {
    /// The destination class.
    static var destinationType: ManagedObject.Type { get }
    /// Whether the relationship is to-many.
    static var isToMany: Bool { get }
    /// Whether a to-many relationship keeps its order.
    static var isOrdered: Bool { get }
    /// The destinations as a list.
    var relatedObjects: [ManagedObject] { get }
    /// Makes a value from a list of destinations (objects of the destination class).
    init(relatedObjects: [ManagedObject])
    /// Makes a to-one value from its destination (nil: none). Only called when `isToMany` is false.
    init(toOneDestination: ManagedObject?)
}

extension RelationshipValue {
    /// Makes a to-one value through ``init(relatedObjects:)``.
    @inlinable
    public init(toOneDestination: ManagedObject?) {
        self.init(relatedObjects: toOneDestination.map { [$0] } ?? [])
    }
}

extension Optional: RelationshipValue where Wrapped: ManagedObject {
    public static var destinationType: ManagedObject.Type { Wrapped.self }
    public static var isToMany: Bool { false }
    public static var isOrdered: Bool { false }
    public var relatedObjects: [ManagedObject] { self.map { [$0] } ?? [] }
    public init(relatedObjects: [ManagedObject]) { self = relatedObjects.first as? Wrapped }
    @inlinable public init(toOneDestination: ManagedObject?) { self = toOneDestination as? Wrapped }
}

extension Set: RelationshipValue where Element: ManagedObject {
    public static var destinationType: ManagedObject.Type { Element.self }
    public static var isToMany: Bool { true }
    public static var isOrdered: Bool { false }
    public var relatedObjects: [ManagedObject] { Array(self) }
    public init(relatedObjects: [ManagedObject]) { self.init(relatedObjects.compactMap { $0 as? Element }) }
}

extension Array: RelationshipValue where Element: ManagedObject {
    public static var destinationType: ManagedObject.Type { Element.self }
    public static var isToMany: Bool { true }
    public static var isOrdered: Bool { true }
    public var relatedObjects: [ManagedObject] { self }
    public init(relatedObjects: [ManagedObject]) { self = relatedObjects.compactMap { $0 as? Element } }
}

/// Declares a relationship on a typed ``ManagedObject`` subclass.
///
/// ```swift
/// final class Town: ManagedObject {
///     @Attribute var name: String = ""
///     @Relationship(inverse: "town", deleteRule: .cascade) var people: Set<Person>
/// }
/// final class Person: ManagedObject {
///     @Relationship(inverse: "people") var town: Town?
/// }
/// ```
@propertyWrapper
public struct Relationship<Value: RelationshipValue> {
    /// The property's slot in the slot template of its class and entity; -1 in other objects
    /// (see `SlottedPropertyWrapper`). The declaration's settings are read once, when the class
    /// is reflected, and live in the model.
    @usableFromInline var _slot: Int16 = -1

    /// Declares a relationship.
    /// - Parameters:
    ///   - inverse: the name of the inverse relationship on the destination.
    ///   - deleteRule: what deleting this object does to the destinations.
    ///   - minCount: the fewest objects a to-many relationship may hold at save (0: no limit).
    ///   - maxCount: the most objects a to-many relationship may hold at save (0: no limit).
    ///   - isTransient: whether the relationship is kept in memory only, never stored.
    @inlinable
    public init(
        inverse: String? = nil, deleteRule: DeleteRule = .nullify, minCount: Int = 0, maxCount: Int = 0,
        isTransient: Bool = false
    ) {
        if WrapperRecording.isActive {
            _slot = WrapperRecording.record(
                RelationshipDeclaration<Value>(
                    inverse: inverse, deleteRule: deleteRule, minCount: minCount, maxCount: maxCount, isTransient: isTransient))
        }
    }

    @available(*, unavailable, message: "@Relationship can only be used on ManagedObject subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("@Relationship can only be used on ManagedObject subclasses") }
        set { preconditionFailure("@Relationship can only be used on ManagedObject subclasses") }
    }

    /// Reads and writes go to the object graph.
    @inlinable
    public static subscript<EnclosingSelf: ManagedObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Relationship<Value>>
    ) -> Value {
        @inline(__always) get {
            let slot = ManagedObject._placedSlot(of: object, storage: storageKeyPath)
            if slot < 0 { return Value(relatedObjects: []) }
            if !Value.isToMany { return Value(toOneDestination: object._toOneDestination(at: slot)) }
            return Value(relatedObjects: object._relatedObjects(at: slot))
        }
        @inline(__always) set {
            let slot = ManagedObject._placedSlot(of: object, storage: storageKeyPath)
            if slot < 0 { return }
            object._setRelatedObjects(newValue.relatedObjects, at: slot)
        }
    }
}

/// What a ``Relationship`` declaration says, recorded when its class is reflected.
@usableFromInline
struct RelationshipDeclaration<Value: RelationshipValue>: ReflectedProperty {
    let inverse: String?
    let deleteRule: DeleteRule
    let minCount: Int
    let maxCount: Int
    let isTransient: Bool

    @usableFromInline
    init(inverse: String?, deleteRule: DeleteRule, minCount: Int, maxCount: Int, isTransient: Bool) {
        self.inverse = inverse
        self.deleteRule = deleteRule
        self.minCount = minCount
        self.maxCount = maxCount
        self.isTransient = isTransient
    }

    @usableFromInline func makeDescription(name: String) -> PropertyDescription {
        RelationshipDescription(
            name: name, destination: Value.destinationType.entityName, inverse: inverse,
            isToMany: Value.isToMany, isOrdered: Value.isOrdered, deleteRule: deleteRule,
            isOptional: true, minCount: minCount, maxCount: maxCount, isTransient: isTransient)
    }
    @usableFromInline var isUnique: Bool { false }
    @usableFromInline var isIndexed: Bool { false }
}
