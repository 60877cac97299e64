import Foundation
import Synchronization

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
    // (before it is published); the key-path cache is behind a Mutex.

    /// The entity's name.
    public let name: String
    /// The class instantiated for objects of this entity.
    public let managedObjectClass: ManagedObject.Type
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

    // The `internal(set)` fields below are written only while the model loads, before it is
    // shared; `@exclusivity(unchecked)` drops run-time exclusivity checks on every later read.
    /// The superentity (set when the model loads).
    @exclusivity(unchecked) public internal(set) var superentity: EntityDescription?
    /// The direct sub-entities (set when the model loads).
    @exclusivity(unchecked) public internal(set) var subentities: [EntityDescription] = []
    /// All properties: inherited ones first, in the superentity's order, then own ones.
    @exclusivity(unchecked) public internal(set) var properties: [PropertyDescription] = []
    /// All properties by name.
    @exclusivity(unchecked) public internal(set) var propertiesByName: [String: PropertyDescription] = [:]
    /// All attributes, in property order.
    @exclusivity(unchecked) public internal(set) var attributes: [AttributeDescription] = []
    /// All attributes by name.
    @exclusivity(unchecked) public internal(set) var attributesByName: [String: AttributeDescription] = [:]
    /// All relationships, in property order.
    @exclusivity(unchecked) public internal(set) var relationships: [RelationshipDescription] = []
    /// All relationships by name.
    @exclusivity(unchecked) public internal(set) var relationshipsByName: [String: RelationshipDescription] = [:]
    /// The model this entity belongs to (set when the model loads).
    /// (Strong, like every model back-reference: see `PropertyDescription.entity`.)
    @exclusivity(unchecked) public internal(set) var managedObjectModel: ManagedObjectModel?

    /// The entity's number in its model (1-based; stored in each row).
    @exclusivity(unchecked) package internal(set) var entityNumber: Int = 0
    /// This entity and all its descendants' numbers.
    @exclusivity(unchecked) package internal(set) var descendantNumbers: [Int] = []
    /// The top of the inheritance chain (self when there is no superentity).
    public var rootEntity: EntityDescription {
        var e = self
        while let s = e.superentity { e = s }
        return e
    }
    /// Whether the entity has been loaded into a model.
    var isLoaded: Bool { entityNumber != 0 }

    /// Key path → slot cache: an open-addressing hash table (linear probing) read without
    /// locks. Writers fill an entry under `slotWriter`: the slot first, then the key with a
    /// releasing store that publishes it; readers load keys (acquiring) from the key path's hash
    /// until they find it or an empty entry. The table is kept at most half full (key paths are
    /// made per call site, so a property can have a few); more go to `slotOverflow`.
    @exclusivity(unchecked) @usableFromInline var slotKeys: UnsafeMutablePointer<Atomic<UInt>>?
    @exclusivity(unchecked) @usableFromInline var slotValues: UnsafeMutablePointer<Int>?
    /// The table's capacity minus one (a power of two minus one).
    @exclusivity(unchecked) @usableFromInline var slotMask = 0
    /// 64 minus log2 of the capacity: the shift that turns a 64-bit hash into an index.
    @exclusivity(unchecked) @usableFromInline var slotShift = 64
    /// Entries in use (changed under `slotWriter` only).
    @exclusivity(unchecked) private var slotUsed = 0
    private let slotWriter = Mutex<[SendableKeyPath]>([])
    private let slotOverflow = Mutex<[UInt: Int]>([:])
    private let resolvedKeyPaths = Mutex<[SendableKeyPath: PropertyDescription]>([:])

    /// Creates an entity description.
    public init(name: String, managedObjectClass: ManagedObject.Type = ManagedObject.self, isAbstract: Bool = false,
                superentity: String? = nil, properties: [PropertyDescription], uniquenessConstraints: [[String]] = [],
                indexes: [[String]] = [], userInfo: [String: any Sendable] = [:]) {
        self.name = name
        self.managedObjectClass = managedObjectClass
        self.isAbstract = isAbstract
        self.superentityName = superentity
        self.ownProperties = properties
        self.uniquenessConstraints = uniquenessConstraints
        self.indexes = indexes
        self.userInfo = userInfo
        // Entity descriptions are immortal: a loaded model already keeps itself and its
        // entities alive (its back-references are strong), and this extra retain extends that to
        // every entity, loaded or not. Object IDs and objects can then refer to their entity
        // without reference counting (`unowned(unsafe)`): copying an ID costs no atomic operation.
        _ = Unmanaged.passRetained(self)
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

    public static func == (lhs: EntityDescription, rhs: EntityDescription) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "<EntityDescription \(name)>" }

    // MARK: Key paths of typed subclasses

    /// The slot of the property whose wrapper storage is `storage` (`\Person._name`).
    /// - Complexity: O(1) expected: one multiplication and a probe or two of a half-full table,
    ///   without locking; the first use of each key path parses its name.
    @inlinable @inline(__always)
    package func slot(forStorage storage: AnyKeyPath) -> Int? {
        let key = UInt(bitPattern: ObjectIdentifier(storage))
        if let slot = _cachedSlot(key) { return slot }
        return _resolveSlot(storage, key: key)
    }

    @inlinable @inline(__always)
    func _cachedSlot(_ key: UInt) -> Int? {
        guard let keys = slotKeys, let values = slotValues else { return nil }
        // Fibonacci hashing: key paths are heap objects, whose low bits are all alike.
        var i = Int(truncatingIfNeeded: (UInt64(key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(slotShift)) & slotMask
        while true {
            let k = keys[i].load(ordering: .acquiring)
            if k == key { return values[i] }
            if k == 0 { return nil }
            i = (i &+ 1) & slotMask
        }
    }

    @usableFromInline
    func _resolveSlot(_ storage: AnyKeyPath, key: UInt) -> Int? {
        // Key path objects are made per call site, so one property can have several; those past
        // the lock-free table's capacity are kept in a locked dictionary. Names are parsed once.
        if let slot = slotOverflow.withLock({ $0[key] }) { return slot }
        guard let name = EntityDescription.propertyName(fromStorage: storage),
              let property = propertiesByName[name] else { return nil }
        let entry = SendableKeyPath(storage)
        slotWriter.withLock { retained in
            retained.append(entry)   // keeps the key path (and so its identity) alive
            guard let keys = slotKeys, let values = slotValues else { return }
            if _cachedSlot(key) != nil { return }
            guard (slotUsed + 1) * 2 <= slotMask + 1 else {
                slotOverflow.withLock { $0[key] = property.slot }
                return
            }
            var i = Int(truncatingIfNeeded: (UInt64(key) &* 0x9E37_79B9_7F4A_7C15) >> UInt64(slotShift)) & slotMask
            while keys[i].load(ordering: .relaxed) != 0 { i = (i &+ 1) & slotMask }
            values[i] = property.slot
            keys[i].store(key, ordering: .releasing)
            slotUsed += 1
        }
        return property.slot
    }

    deinit {
        if let keys = slotKeys {
            keys.deinitialize(count: slotMask + 1)
            keys.deallocate()
        }
        slotValues?.deallocate()
    }

    /// Allocates the slot table (when the model loads).
    func prepareSlotTable() {
        guard slotKeys == nil else { return }
        // Room for 16 + 4 key paths per property at half load, rounded up to a power of two.
        let wanted = 2 * (16 + 4 * properties.count)
        var bits = 5
        while 1 << bits < wanted { bits += 1 }
        let capacity = 1 << bits
        let keys = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: capacity)
        for i in 0..<capacity { (keys + i).initialize(to: Atomic(0)) }
        slotValues = .allocate(capacity: capacity)
        slotMask = capacity - 1
        slotShift = 64 - bits
        slotKeys = keys
    }

    /// Parses `\Person._name` → `name`.
    static func propertyName(fromStorage storage: AnyKeyPath) -> String? {
        let text = String(describing: storage)
        guard let dot = text.lastIndex(of: ".") else { return nil }
        var name = text[text.index(after: dot)...]
        guard name.first == "_" else { return nil }
        name = name.dropFirst()
        return name.isEmpty ? nil : String(name)
    }

    /// The property a key path of the typed class leads to (`\Person.name` → `name`), found by
    /// reading the key path once on a probe object that records which storage it touched.
    func property(forKeyPath keyPath: AnyKeyPath) -> PropertyDescription? {
        let key = SendableKeyPath(keyPath)
        if let hit = resolvedKeyPaths.withLock({ $0[key] }) { return hit }
        guard let property = KeyPathProbe.resolve(keyPath, in: self) else { return nil }
        resolvedKeyPaths.withLock { $0[key] = property }
        return property
    }

    // MARK: Store layout

    /// The properties kept in a store's row: attributes and foreign-key relationships that are
    /// not transient.
    @exclusivity(unchecked) package internal(set) var storedProperties: [PropertyDescription] = []
    /// Slots of the stored (non-transient) attributes, ascending.
    @exclusivity(unchecked) package internal(set) var storedAttributeSlots: [Int] = []
    /// Slots of the stored attributes that must not be nil.
    @exclusivity(unchecked) package internal(set) var requiredAttributeSlots: [Int] = []
    /// Stored attributes with validation rules (range, length or pattern).
    @exclusivity(unchecked) package internal(set) var ruledAttributes: [AttributeDescription] = []
    /// Stored to-one relationships (foreign keys) in property order; inherited ones keep their
    /// position in every sub-entity.
    @exclusivity(unchecked) package internal(set) var foreignKeyRelationships: [RelationshipDescription] = []
    /// The values of a new object, computed when the model loads.
    @exclusivity(unchecked) package internal(set) var _initialValues: [StoredValue]?
}

/// A key path kept in a cache shared across threads.
struct SendableKeyPath: Hashable, @unchecked Sendable {
    // @unchecked Sendable: key path objects are immutable once created; the cache only
    // compares, hashes and retains them (retaining keeps their identity from being reused).
    let keyPath: AnyKeyPath
    init(_ keyPath: AnyKeyPath) { self.keyPath = keyPath }
}
