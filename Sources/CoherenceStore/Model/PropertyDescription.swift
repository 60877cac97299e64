import Foundation

/// A property of an entity: an ``AttributeDescription`` or a ``RelationshipDescription``.
///
/// Descriptions are immutable once their model is loaded and can be shared across threads.
public class PropertyDescription: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: every stored property is either `let` or written only while the
    // owning ManagedObjectModel is being loaded, before the model is published to other threads.

    /// The property's name.
    public let name: String
    /// Whether the property may be nil (to-one) or empty (to-many) at save.
    public let isOptional: Bool
    /// Whether the property is kept in memory only.
    public let isTransient: Bool
    /// Arbitrary information (for example from an Xcode model's user info).
    public let userInfo: [String: any Sendable]
    /// The property's name in the previous model version, when it was renamed (Core Data's
    /// `renamingIdentifier`; Xcode's "Renaming ID"). A lightweight migration moves the old
    /// property's values into this one. Not part of the version hash.
    public let renamingIdentifier: String?

    /// The entity that declares the property (inherited properties keep their declaring entity).
    ///
    /// Set when the model loads; nil before, and once the model is gone (the entity owns the
    /// property, so this reference does not own the entity: see `EntityLink`).
    public internal(set) var entity: EntityDescription? {
        get { entityLink.entity(in: linkedModel) }
        set {
            entityLink = EntityLink(loading: newValue)
            if newValue != nil { isClaimed = true }
        }
    }
    // Fields set while the model loads, read-only afterwards: no run-time exclusivity checks.
    @exclusivity(unchecked) var entityLink = EntityLink(loading: nil)
    /// The model the links resolve in (weak: the model owns the entity, which owns this).
    weak var linkedModel: ManagedObjectModel?
    /// Whether a model has taken the property (it cannot join another one, even after that
    /// model is gone or failed to load).
    @exclusivity(unchecked) package internal(set) var isClaimed = false
    /// The index of this property's value in a managed object's value storage and row snapshots.
    /// Inherited properties have the same slot in every sub-entity.
    package internal(set) final var slot: Int {
        @inlinable get { _slot }
        set { _slot = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _slot: Int = -1

    init(name: String, isOptional: Bool, isTransient: Bool, userInfo: [String: any Sendable], renamingIdentifier: String?) {
        self.name = name
        self.renamingIdentifier = renamingIdentifier
        self.isOptional = isOptional
        self.isTransient = isTransient
        self.userInfo = userInfo
    }

    /// The property's name.
    public var description: String { name }
}

/// Rules an attribute's value must satisfy at save (Core Data's validation predicates).
///
/// ```swift
/// AttributeDescription(name: "age", type: .integer64,
///                      validation: AttributeValidation(minimum: 0, maximum: 150))
/// ```
public struct AttributeValidation: Hashable, Sendable {
    /// Smallest allowed number (dates: seconds since 2001-01-01).
    public var minimum: Double?
    /// Largest allowed number (dates: seconds since 2001-01-01).
    public var maximum: Double?
    /// Shortest allowed string (in characters) or data (in bytes).
    public var minLength: Int?
    /// Longest allowed string (in characters) or data (in bytes).
    public var maxLength: Int?
    /// A regular expression the whole string must match.
    public var regularExpression: String?

    /// Creates validation rules; omit what does not apply.
    public init(
        minimum: Double? = nil, maximum: Double? = nil, minLength: Int? = nil, maxLength: Int? = nil,
        regularExpression: String? = nil
    ) {
        self.minimum = minimum
        self.maximum = maximum
        self.minLength = minLength
        self.maxLength = maxLength
        self.regularExpression = regularExpression
    }

    /// No rules.
    public static let none = AttributeValidation()

    @inlinable var isEmpty: Bool {
        minimum == nil && maximum == nil && minLength == nil && maxLength == nil && regularExpression == nil
    }
}

/// An attribute of an entity, as Core Data's `NSAttributeDescription`.
///
/// ```swift
/// let name = AttributeDescription(name: "name", type: .string, isOptional: false,
///                                 defaultValue: "", validation: .init(maxLength: 100))
/// ```
public final class AttributeDescription: PropertyDescription, @unchecked Sendable {
    // @unchecked Sendable: as PropertyDescription (immutable once the model is loaded).
    /// The attribute's type.
    public let type: AttributeType
    /// The value a new object gets, in stored form (`nil`: no default).
    public let defaultValue: StoredValue?
    /// Validation rules checked at save.
    public let validation: AttributeValidation
    /// The name of a registered value transformer (transformable attributes).
    public let valueTransformerName: String?
    /// Whether persistent history keeps this attribute's value when an object is deleted, in the
    /// delete's ``PersistentHistoryChange/tombstone`` (Core Data's
    /// `preservesValueInHistoryOnDeletion`). Attributes of uniqueness constraints are kept too.
    public let preservesValueInHistoryOnDeletion: Bool
    /// Whether persistent history keeps this attribute's old and new values when an update
    /// changes it (``PersistentHistoryChange/oldValues`` and ``PersistentHistoryChange/newValues``;
    /// Core Data records only the names of updated properties). See also
    /// ``EntityDescription/recordsValuesInHistory``.
    public let recordsValuesInHistory: Bool
    /// Compiled regular expression (when `validation.regularExpression` is set).
    // Invariant: set only while the model loads; afterwards only read (matching with one
    // NSRegularExpression from several threads is safe).
    package nonisolated(unsafe) var compiledRegex: NSRegularExpression?

    /// Creates an attribute description.
    /// - Parameters:
    ///   - name: the attribute's name.
    ///   - type: the attribute's type.
    ///   - isOptional: whether the value may be nil at save.
    ///   - defaultValue: a value of the attribute's Swift type (`Int`, `String`, `Date`, …), or nil.
    ///   - isTransient: whether the attribute is kept in memory only, never stored.
    ///   - validation: rules the value must satisfy at save.
    ///   - valueTransformerName: the registered transformer of a transformable attribute.
    ///   - userInfo: arbitrary information.
    ///   - preservesValueInHistoryOnDeletion: keep the value in the history of a delete (its tombstone).
    ///   - recordsValuesInHistory: keep the old and new values in the history of an update.
    ///   - renamingIdentifier: the attribute's name in the previous model version, when renamed.
    public init(
        name: String, type: AttributeType, isOptional: Bool = false, defaultValue: (any PersistentValue)? = nil,
        isTransient: Bool = false, validation: AttributeValidation = .none, valueTransformerName: String? = nil,
        userInfo: [String: any Sendable] = [:], preservesValueInHistoryOnDeletion: Bool = false,
        recordsValuesInHistory: Bool = false, renamingIdentifier: String? = nil
    ) {
        self.type = type
        self.defaultValue = defaultValue.map { $0.storedValue }
        self.validation = validation
        self.valueTransformerName = valueTransformerName
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        self.recordsValuesInHistory = recordsValuesInHistory
        super.init(
            name: name, isOptional: isOptional, isTransient: isTransient, userInfo: userInfo, renamingIdentifier: renamingIdentifier)
    }

    /// Creates an attribute with a default value already in stored form.
    public init(
        name: String, type: AttributeType, isOptional: Bool, storedDefault: StoredValue?,
        isTransient: Bool = false, validation: AttributeValidation = .none, valueTransformerName: String? = nil,
        userInfo: [String: any Sendable] = [:], preservesValueInHistoryOnDeletion: Bool = false,
        recordsValuesInHistory: Bool = false, renamingIdentifier: String? = nil
    ) {
        self.type = type
        self.defaultValue = storedDefault
        self.validation = validation
        self.valueTransformerName = valueTransformerName
        self.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        self.recordsValuesInHistory = recordsValuesInHistory
        super.init(
            name: name, isOptional: isOptional, isTransient: isTransient, userInfo: userInfo, renamingIdentifier: renamingIdentifier)
    }

    /// The value a new object starts with.
    package var initialValue: StoredValue { defaultValue ?? .null }

    /// The name and type, for example `age: Integer 64?` (`?`: optional).
    public override var description: String { "\(name): \(type)\(isOptional ? "?" : "")" }
}

/// What happens to a relationship's destinations when its source object is deleted.
public struct DeleteRule: Hashable, Sendable, CustomStringConvertible {
    package enum Kind: Hashable, Sendable { case nullify, cascade, deny, noAction }
    package let kind: Kind
    /// Remove the deleted object from the inverse relationship of each destination.
    public static let nullify = DeleteRule(kind: .nullify)
    /// Delete the destinations too.
    public static let cascade = DeleteRule(kind: .cascade)
    /// Refuse to delete (the save fails) while the relationship is not empty.
    public static let deny = DeleteRule(kind: .deny)
    /// Do nothing: destinations keep pointing at the deleted object.
    public static let noAction = DeleteRule(kind: .noAction)
    /// The rule's name, for example `cascade`.
    public var description: String {
        switch kind {
        case .nullify: return "nullify"
        case .cascade: return "cascade"
        case .deny: return "deny"
        case .noAction: return "noAction"
        }
    }
}

/// A relationship of an entity, as Core Data's `NSRelationshipDescription`.
///
/// ```swift
/// RelationshipDescription(name: "town", destination: "Town", inverse: "people")
/// RelationshipDescription(name: "people", destination: "Person", inverse: "town",
///                         isToMany: true, deleteRule: .cascade)
/// ```
public final class RelationshipDescription: PropertyDescription, @unchecked Sendable {
    // @unchecked Sendable: as PropertyDescription (immutable once the model is loaded).
    /// The name of the destination entity.
    public let destinationEntityName: String
    /// The name of the inverse relationship on the destination, if any.
    public let inverseName: String?
    /// Whether the relationship holds many objects.
    public let isToMany: Bool
    /// Whether a to-many relationship keeps its order.
    public let isOrdered: Bool
    /// What deleting the source does to the destinations.
    public let deleteRule: DeleteRule
    /// Fewest objects a to-many relationship may hold at save (0: no limit).
    public let minCount: Int
    /// Most objects a to-many relationship may hold at save (0: no limit).
    public let maxCount: Int

    /// The destination entity (set when the model loads; nil once the model is gone).
    public internal(set) var destinationEntity: EntityDescription? {
        get { destinationLink.entity(in: linkedModel) }
        set { destinationLink = EntityLink(loading: newValue) }
    }
    @exclusivity(unchecked) var destinationLink = EntityLink(loading: nil)
    /// The inverse relationship (set when the model loads; nil once the model is gone).
    public internal(set) var inverseRelationship: RelationshipDescription? {
        get {
            if let loadingInverse { return loadingInverse }
            guard inverseSlot >= 0, let owner = inverseOwner.entity(in: linkedModel) else { return nil }
            let properties = owner.properties
            return inverseSlot < properties.count ? properties[inverseSlot] as? RelationshipDescription : nil
        }
        set { loadingInverse = newValue }
    }
    /// The inverse while the model loads (then: its declaring entity and its slot).
    @exclusivity(unchecked) private var loadingInverse: RelationshipDescription?
    @exclusivity(unchecked) private var inverseOwner = EntityLink(loading: nil)
    @exclusivity(unchecked) private var inverseSlot = -1
    /// The index of this relationship in `entity.foreignKeyRelationships` (foreign keys only).
    package internal(set) var fkOrdinal: Int {
        @inlinable get { _fkOrdinal }
        set { _fkOrdinal = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _fkOrdinal: Int = -1
    /// How the relationship is stored (decided when the model loads).
    package internal(set) var storage: RelationshipStorage {
        @inlinable get { _storage }
        set { _storage = newValue }
    }
    @exclusivity(unchecked) @usableFromInline var _storage: RelationshipStorage = .foreignKey

    /// Creates a relationship description (`renamingIdentifier`: its name in the previous model
    /// version, when renamed).
    public init(
        name: String, destination: String, inverse: String? = nil, isToMany: Bool = false, isOrdered: Bool = false,
        deleteRule: DeleteRule = .nullify, isOptional: Bool = true, minCount: Int = 0, maxCount: Int = 0,
        isTransient: Bool = false, userInfo: [String: any Sendable] = [:], renamingIdentifier: String? = nil
    ) {
        self.destinationEntityName = destination
        self.inverseName = inverse
        self.isToMany = isToMany
        self.isOrdered = isOrdered
        self.deleteRule = deleteRule
        self.minCount = minCount
        self.maxCount = maxCount
        super.init(
            name: name, isOptional: isOptional, isTransient: isTransient, userInfo: userInfo, renamingIdentifier: renamingIdentifier)
    }

    /// Whether this side holds the foreign key column.
    package var hasForeignKey: Bool {
        if case .foreignKey = storage { return true }
        return false
    }

    /// Whether this is an ordered to-many relationship kept in the destinations' foreign keys
    /// (its inverse is a to-one foreign key): the destination rows then keep their place in an
    /// order column beside that key (see ``SQLGenerator/orderColumnName(_:)``).
    package var keepsOrderInDestinations: Bool {
        guard isToMany, isOrdered, !isTransient, case .inverseForeignKey = storage else { return false }
        return true
    }

    /// Whether this to-one foreign-key relationship has an order column beside its key: its
    /// inverse is ordered and kept in this key (``keepsOrderInDestinations``).
    package var hasOrderColumn: Bool {
        guard !isToMany, !isTransient, hasForeignKey, let inverse = inverseRelationship else { return false }
        return inverse.keepsOrderInDestinations
    }

    /// The name and destination, for example `employees → [Person]` (brackets: to-many).
    public override var description: String {
        "\(name) → \(isToMany ? "[\(destinationEntityName)]" : destinationEntityName)"
    }
}

/// How a relationship is kept in a store.
@usableFromInline package enum RelationshipStorage: Hashable, Sendable {
    /// A column on the source row holds the destination's primary key (to-one).
    case foreignKey
    /// The destination rows hold this object's key in the inverse's foreign-key column.
    case inverseForeignKey
    /// A join table with one row per pair (to-many without a to-one inverse).
    /// `sourceIsFirst`: whether this side's key is the table's first column.
    case joinTable(name: String, sourceIsFirst: Bool)
}

extension PropertyDescription {
    /// Turns the property's references into links to `model`'s entities (see `EntityLink`),
    /// once the model has numbered them.
    func publishLinks(in model: ManagedObjectModel) {
        linkedModel = model
        entityLink.publish(in: model)
        if let r = self as? RelationshipDescription { r.publishRelationshipLinks(in: model) }
    }

    /// Drops the property's strong references to entities (its model failed to load).
    func abandonLinks() {
        entityLink.abandon()
        if let r = self as? RelationshipDescription { r.abandonRelationshipLinks() }
    }
}

extension RelationshipDescription {
    fileprivate func publishRelationshipLinks(in model: ManagedObjectModel) {
        destinationLink.publish(in: model)
        guard let inverse = loadingInverse else { return }
        loadingInverse = nil
        inverseOwner = EntityLink(loading: inverse.entityLink.loading ?? inverse.entityLink.entity(in: model))
        inverseOwner.publish(in: model)
        inverseSlot = inverse.slot
    }

    fileprivate func abandonRelationshipLinks() {
        destinationLink.abandon()
        loadingInverse = nil
    }
}
