import Foundation

/// An entity of a managed object model, as Core Data's `NSEntityDescription`.
///
/// Build one in code, or let Coherence reflect a typed ``ManagedObject`` subclass:
///
/// ```swift
/// let town = EntityDescription(name: "Town", properties: [
///     AttributeDescription(name: "name", type: .string),
///     RelationshipDescription(name: "people", destination: "Person", inverse: "town", isToMany: true),
/// ], uniquenessConstraints: [["name"]])
///
/// let person = try EntityDescription(reflecting: Person.self)
/// ```
///
/// Entities are immutable once their model is loaded and can be shared across threads.
public final class EntityDescription: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked Sendable: `let`s, plus fields written only while the owning model is loaded
    // (before it is published); the key-path cache is behind a lock.

    /// The entity's name.
    public let name: String
    /// The class instantiated for objects of this entity (nil: `ManagedObject` itself). The
    /// layer above reads it as `managedObjectClass`.
    package let objectClass: (any EntityObjectClass.Type)?
    /// Whether the entity is abstract (no objects of exactly this entity).
    public let isAbstract: Bool
    /// The name of the superentity, if any.
    public let superentityName: String?
    /// Sets of attribute names whose combined values must be unique among all objects of the
    /// entity and its sub-entities.
    public let uniquenessConstraints: [[String]]
    /// Sets of property names to index in the store.
    public let indexes: [[String]]
    /// Arbitrary information (for example `uniquenessAttributes`, used by Connect's actions).
    public let userInfo: [String: any Sendable]
    /// The properties this entity declares itself (not inherited ones).
    public let ownProperties: [PropertyDescription]
    /// Whether persistent history keeps the old and new values of every stored attribute an
    /// update changes, for objects of this entity and its sub-entities (as
    /// ``AttributeDescription/recordsValuesInHistory`` on each attribute).
    public let recordsValuesInHistory: Bool
    /// The entity's name in the previous model version, when it was renamed (Core Data's
    /// `renamingIdentifier`; Xcode's "Renaming ID"). A lightweight migration moves the old
    /// entity's rows into this one. Not part of the version hash.
    public let renamingIdentifier: String?

    // The `internal(set)` fields below are written only while the model loads, before it is
    // shared; `@exclusivity(unchecked)` drops run-time exclusivity checks on every later read.
    // Other targets (contexts, per object) read them through inlinable getters: a class's
    // stored property read from another module is checked at run time (`swift_beginAccess`)
    // whatever its `@exclusivity(unchecked)`; the inlined getter brings the unchecked access.
    /// The superentity (set when the model loads).
    public internal(set) var superentity: EntityDescription? {
        @inlinable get { _superentity }
        set { _superentity = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _superentity: EntityDescription?
    /// The direct sub-entities (set when the model loads; empty once the model is gone).
    public internal(set) var subentities: [EntityDescription] {
        get {
            if subentityLinks.isEmpty { return [] }
            let model = managedObjectModel
            return subentityLinks.compactMap { $0.entity(in: model) }
        }
        set { subentityLinks = newValue.map { EntityLink(loading: $0) } }
    }
    /// Links to the sub-entities (a parent does not own its sub-entities: the model does, and
    /// each sub-entity owns its ``superentity``).
    @exclusivity(unchecked) private var subentityLinks: [EntityLink] = []
    /// All properties: inherited ones first, in the superentity's order, then own ones.
    public internal(set) var properties: [PropertyDescription] {
        @inlinable get { _properties }
        set { _properties = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _properties: [PropertyDescription] = []
    /// All properties by name.
    public internal(set) var propertiesByName: [String: PropertyDescription] {
        @inlinable get { _propertiesByName }
        set { _propertiesByName = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _propertiesByName: [String: PropertyDescription] = [:]
    /// All attributes, in property order.
    public internal(set) var attributes: [AttributeDescription] {
        @inlinable get { _attributes }
        set { _attributes = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _attributes: [AttributeDescription] = []
    /// All attributes by name.
    public internal(set) var attributesByName: [String: AttributeDescription] {
        @inlinable get { _attributesByName }
        set { _attributesByName = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _attributesByName: [String: AttributeDescription] = [:]
    /// All relationships, in property order.
    public internal(set) var relationships: [RelationshipDescription] {
        @inlinable get { _relationships }
        set { _relationships = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _relationships: [RelationshipDescription] = []
    /// All relationships by name.
    public internal(set) var relationshipsByName: [String: RelationshipDescription] {
        @inlinable get { _relationshipsByName }
        set { _relationshipsByName = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _relationshipsByName: [String: RelationshipDescription] = [:]
    /// The model this entity belongs to (set when the model loads; nil once the model is
    /// gone: the model owns its entities, and an object or ID can outlive it).
    public internal(set) weak var managedObjectModel: ManagedObjectModel?

    /// The entity's number in its model (1-based; stored in each row).
    package internal(set) var entityNumber: Int {
        @inlinable get { _entityNumber }
        set { _entityNumber = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _entityNumber: Int = 0
    /// This entity and all its descendants' numbers.
    package internal(set) var descendantNumbers: [Int] {
        @inlinable get { _descendantNumbers }
        set { _descendantNumbers = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _descendantNumbers: [Int] = []
    /// The root entity's address, set when the model loads (0 before): identity-map hashing
    /// reads it per row without walking (and reference counting) the chain.
    @inlinable package var rootIdentity: UInt { _rootIdentity }
    @exclusivity(unchecked) @usableFromInline var _rootIdentity: UInt = 0
    /// The top of the inheritance chain (self when there is no superentity).
    public var rootEntity: EntityDescription {
        var e = self
        while let s = e.superentity { e = s }
        return e
    }
    /// Whether the entity has been loaded into a model.
    package var isLoaded: Bool { entityNumber != 0 }

    /// Data the class of the entity's objects keeps for it (see ``EntityObjectClass``), set
    /// when the model loads (for `ManagedObject` subclasses: their slot plan).
    @inlinable package var objectClassData: AnyObject? {
        get { _objectClassData }
        set { _objectClassData = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _objectClassData: AnyObject?
    /// The object every new object of the entity's class refers to (for `ManagedObject`
    /// subclasses: their slot template), set with ``objectClassData``; read once per new object.
    @inlinable package var objectTemplate: AnyObject? {
        get { _objectTemplate }
        set {
            _objectTemplate = newValue
            _unretainedObjectTemplate = newValue.map { UnretainedReference($0) }
        }
    }
    @exclusivity(unchecked) @usableFromInline var _objectTemplate: AnyObject?
    /// ``objectTemplate`` without retaining it, read once per new object: a field load (reading
    /// `_objectTemplate` to make it would retain and release the template, two atomic
    /// operations per object).
    // Invariant: `_objectTemplate` holds the same object (both set together above).
    @inlinable package var unretainedObjectTemplate: UnretainedReference<AnyObject>? { _unretainedObjectTemplate }
    @exclusivity(unchecked) @usableFromInline var _unretainedObjectTemplate: UnretainedReference<AnyObject>?
    /// The same data for other classes (subclasses outside the model), made on first use.
    package let otherClassData = LockedValue<[ObjectIdentifier: AnyObject]>([:])
    package let resolvedKeyPaths = LockedValue<[SendableKeyPath: PropertyDescription]>([:])

    /// Creates an entity description whose objects are of `objectClass` (nil: `ManagedObject`).
    /// Users call the initializer of the layer above, which takes a `ManagedObject` subclass.
    package init(
        name: String, objectClass: (any EntityObjectClass.Type)?, isAbstract: Bool = false,
        superentity: String? = nil, properties: [PropertyDescription], uniquenessConstraints: [[String]] = [],
        indexes: [[String]] = [], userInfo: [String: any Sendable] = [:], recordsValuesInHistory: Bool = false,
        renamingIdentifier: String? = nil
    ) {
        self.name = name
        self.renamingIdentifier = renamingIdentifier
        self.recordsValuesInHistory = recordsValuesInHistory
        self.objectClass = objectClass
        self.isAbstract = isAbstract
        self.superentityName = superentity
        self.ownProperties = properties
        self.uniquenessConstraints = uniquenessConstraints
        self.indexes = indexes
        self.userInfo = userInfo
    }

    /// Turns the entity's and its own properties' references to other entities into links to
    /// `model` (see `EntityLink`), once the model has numbered its entities.
    func publishLinks(in model: ManagedObjectModel) {
        for i in subentityLinks.indices { subentityLinks[i].publish(in: model) }
        for p in ownProperties { p.publishLinks(in: model) }
    }

    /// Drops the entity's and its own properties' strong references to other entities (its
    /// model failed to load), so that they do not keep one another alive.
    func abandonLinks() {
        subentityLinks = []
        for p in ownProperties { p.abandonLinks() }
    }

    /// Whether `other` is this entity or one of its descendants.
    public func isKindOf(_ other: EntityDescription) -> Bool {
        var e: EntityDescription? = self
        while let c = e {
            if c === other { return true }
            e = c.superentity
        }
        return false
    }

    /// Whether both are the same description object (identity).
    public static func == (lhs: EntityDescription, rhs: EntityDescription) -> Bool { lhs === rhs }
    /// Hashes the description's identity, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// `<EntityDescription Name>`.
    public var description: String { "<EntityDescription \(name)>" }

    // MARK: Key paths of typed subclasses

    // MARK: Store layout

    /// The properties kept in a store's row: attributes and foreign-key relationships that are
    /// not transient.
    package internal(set) var storedProperties: [PropertyDescription] {
        @inlinable get { _storedProperties }
        set { _storedProperties = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _storedProperties: [PropertyDescription] = []
    /// Slots of the stored (non-transient) attributes, ascending.
    package internal(set) var storedAttributeSlots: [Int] {
        @inlinable get { _storedAttributeSlots }
        set { _storedAttributeSlots = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _storedAttributeSlots: [Int] = []
    /// Whether each slot is a stored attribute's (indexed by slot).
    package internal(set) var isStoredAttributeSlot: [Bool] {
        @inlinable get { _isStoredAttributeSlot }
        set { _isStoredAttributeSlot = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _isStoredAttributeSlot: [Bool] = []
    /// Slots of the stored attributes that must not be nil.
    package internal(set) var requiredAttributeSlots: [Int] {
        @inlinable get { _requiredAttributeSlots }
        set { _requiredAttributeSlots = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _requiredAttributeSlots: [Int] = []
    /// Relationships a save must check: to-many ones with count bounds, required to-one ones.
    package internal(set) var constrainedRelationships: [RelationshipDescription] {
        @inlinable get { _constrainedRelationships }
        set { _constrainedRelationships = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _constrainedRelationships: [RelationshipDescription] = []
    /// Stored attributes with validation rules (range, length or pattern).
    package internal(set) var ruledAttributes: [AttributeDescription] {
        @inlinable get { _ruledAttributes }
        set { _ruledAttributes = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _ruledAttributes: [AttributeDescription] = []
    /// Stored to-one relationships (foreign keys) in property order; inherited ones keep their
    /// position in every sub-entity.
    package internal(set) var foreignKeyRelationships: [RelationshipDescription] {
        @inlinable get { _foreignKeyRelationships }
        set { _foreignKeyRelationships = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _foreignKeyRelationships: [RelationshipDescription] = []
    /// The ordered to-many relationships whose destinations keep their place in an order
    /// column (``RelationshipDescription/keepsOrderInDestinations``); empty for most entities,
    /// so a save does no work for the objects of those.
    package internal(set) var orderedKeyRelationships: [RelationshipDescription] {
        @inlinable get { _orderedKeyRelationships }
        set { _orderedKeyRelationships = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _orderedKeyRelationships: [RelationshipDescription] = []
    /// The ordered to-many relationships kept in a join table, which keeps no order: their
    /// destinations are read in key order, and a save that would change that order is refused.
    package internal(set) var orderedJoinRelationships: [RelationshipDescription] {
        @inlinable get { _orderedJoinRelationships }
        set { _orderedJoinRelationships = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _orderedJoinRelationships: [RelationshipDescription] = []
    /// The values of a new object, computed when the model loads.
    package internal(set) var _initialValues: [StoredValue]? {
        @inlinable get { __initialValues }
        set { __initialValues = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var __initialValues: [StoredValue]?
    /// The values of a new object: each attribute's default, nil for relationships.
    @inlinable package var initialValues: [StoredValue] {
        if let cached = __initialValues { return cached }
        return uncachedInitialValues()
    }

    @usableFromInline func uncachedInitialValues() -> [StoredValue] {
        properties.map { ($0 as? AttributeDescription)?.initialValue ?? .null }
    }
}

/// A key path kept in a cache shared across threads.
package struct SendableKeyPath: Hashable, @unchecked Sendable {
    // @unchecked Sendable: key path objects are immutable once created; the cache only
    // compares, hashes and retains them (retaining keeps their identity from being reused).
    let keyPath: AnyKeyPath
    package init(_ keyPath: AnyKeyPath) { self.keyPath = keyPath }
}
