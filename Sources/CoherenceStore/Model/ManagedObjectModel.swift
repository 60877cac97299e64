import Foundation

/// A managed object model: entities and named configurations, as Core Data's `NSManagedObjectModel`.
///
/// Define it from typed subclasses, or build it in code for models known only at run time:
///
/// ```swift
/// let model = try ManagedObjectModel(types: [Person.self, Town.self])
///
/// let model2 = try ManagedObjectModel(entities: [town, person],
///                                     configurations: ["Cache": ["Town"], "User": ["Person"]])
/// ```
///
/// Loading validates the model and throws ``ModelError`` naming the entity and property at
/// fault. A model is immutable and can be shared across threads.
public final class ManagedObjectModel: Sendable, CustomStringConvertible {
    /// The configuration that holds every entity.
    public static let defaultConfigurationName = "Default"

    /// All entities, sorted by name.
    public let entities: [EntityDescription]
    /// Entities by name.
    public let entitiesByName: [String: EntityDescription]
    /// Named configurations: each a subset of the entities (whole inheritance hierarchies).
    public let configurations: [String: [String]]
    /// A hash of everything that shapes stored data; two models with equal hashes read and write
    /// the same stores.
    public let versionHash: String
    /// Per-entity version hashes (Core Data's `entityVersionHashesByName`): a store records them
    /// in its metadata, so a migration knows which entities changed.
    public let entityVersionHashes: [String: String]
    /// The model's version name, for example `"Model 2"` (Core Data's `versionIdentifiers`): for
    /// an Xcode model, its "Core Data Model Version Identifier" or else the version's file name;
    /// for a model in code, what the initializer was given. A store records it in its metadata.
    /// Not part of the ``versionHash``.
    public let versionIdentifier: String?
    package let entitiesByClass: [ObjectIdentifier: EntityDescription]
    /// Whether an entity has an ordered many-to-many relationship
    /// (``EntityDescription/orderedJoinRelationships``): a save checks their order only then.
    package let hasOrderedJoinRelationships: Bool

    /// Loads a model from entity descriptions.
    /// - Parameters:
    ///   - entities: the entities, each in no other model.
    ///   - configurations: configuration name → entity names. Each configuration is
    ///     expanded to whole inheritance hierarchies. A relationship may point at an entity of
    ///     another configuration (as in Core Data); relating two objects that live in different
    ///     stores fails at save (`CoherenceError.crossStoreRelationship`).
    ///   - versionIdentifier: the model's version name (see ``versionIdentifier``).
    /// - Throws: ``ModelError`` when the model is inconsistent.
    public init(
        entities: [EntityDescription], configurations: [String: [String]] = [:], versionIdentifier: String? = nil
    ) throws(ModelError) {
        let sorted = entities.sorted { $0.name < $1.name }
        var byName: [String: EntityDescription] = [:]
        for e in sorted {
            guard !e.name.isEmpty else { throw ModelError(.invalidName, entity: e.name, "An entity name is empty.") }
            guard byName[e.name] == nil else {
                throw ModelError(.duplicateEntity, entity: e.name, "Two entities are named '\(e.name)'.")
            }
            guard !e.isLoaded else {
                throw ModelError(
                    .entityInAnotherModel, entity: e.name,
                    "Entity '\(e.name)' already belongs to another model; create a new description.")
            }
            byName[e.name] = e
        }
        var expanded: [String: [String]] = [:]
        do throws(ModelError) {
            try Self.resolveInheritance(sorted, byName: byName)
            try Self.resolveProperties(sorted)
            try Self.resolveRelationships(sorted, byName: byName)
            for e in sorted {
                e._initialValues = e.properties.map { ($0 as? AttributeDescription)?.initialValue ?? .null }
            }
            for e in sorted { try e.objectClass?.prepareObjects(of: e) }
            try Self.checkConstraintsAndIndexes(sorted)
            for (config, names) in configurations {
                var set = Set<String>()
                for n in names {
                    guard let e = byName[n] else {
                        throw ModelError(
                            .unknownConfigurationEntity, entity: n,
                            "Configuration '\(config)' names entity '\(n)', which is not in the model.")
                    }
                    Self.addHierarchy(of: e, to: &set)
                }
                // A relationship whose destination is in another configuration is allowed, as in
                // Core Data: only a save that relates objects of two stores fails
                // (`CoherenceError.crossStoreRelationship`).
                expanded[config] = set.sorted()
            }
        } catch {
            // The links made so far hold entities strongly: dropped, so that nothing of a model
            // that failed to load keeps anything else alive.
            for e in sorted { e.abandonLinks() }
            throw error
        }

        var classMap: [ObjectIdentifier: EntityDescription] = [:]
        var ambiguous = Set<ObjectIdentifier>()
        for e in sorted {
            guard let objectClass = e.objectClass else { continue }
            let id = ObjectIdentifier(objectClass)
            if classMap[id] != nil { ambiguous.insert(id) } else { classMap[id] = e }
        }
        for id in ambiguous { classMap[id] = nil }

        var hashes: [String: String] = [:]
        for e in sorted { hashes[e.name] = StableHash.hex(Self.canonicalDescription(of: e)) }

        self.entities = sorted
        self.versionIdentifier = versionIdentifier
        self.entitiesByName = byName
        self.configurations = expanded
        self.entitiesByClass = classMap
        self.hasOrderedJoinRelationships = sorted.contains { !$0.orderedJoinRelationships.isEmpty }
        self.entityVersionHashes = hashes
        self.versionHash = StableHash.hex(sorted.map { "\($0.name)=\(hashes[$0.name] ?? "")" }.joined(separator: ";"))
        for (i, e) in sorted.enumerated() {
            e.managedObjectModel = self
            e.entityNumber = i + 1
            e._rootIdentity = UInt(bitPattern: ObjectIdentifier(e.rootEntity))
        }
        for e in sorted {
            var numbers: [Int] = []
            Self.collectDescendants(e, into: &numbers)
            e.descendantNumbers = numbers.sorted()
        }
        for e in sorted { e.publishLinks(in: self) }
    }

    /// A model with no entities (what a container holds when its model could not be loaded).
    package init(empty: ()) {
        entities = []
        versionIdentifier = nil
        entitiesByName = [:]
        configurations = [:]
        versionHash = StableHash.hex("")
        entityVersionHashes = [:]
        entitiesByClass = [:]
        hasOrderedJoinRelationships = false
    }

    /// The entities of a configuration; `nil` or ``defaultConfigurationName`` → every entity.
    public func entities(forConfiguration name: String?) -> [EntityDescription]? {
        guard let name, name != Self.defaultConfigurationName else { return entities }
        guard let names = configurations[name] else { return nil }
        return names.compactMap { entitiesByName[$0] }
    }

    /// The version hash of the entities of one configuration (what a store of that
    /// configuration records in its metadata).
    public func versionHash(forConfiguration name: String?) -> String? {
        guard let list = entities(forConfiguration: name) else { return nil }
        return StableHash.hex(list.map { "\($0.name)=\(entityVersionHashes[$0.name] ?? "")" }.joined(separator: ";"))
    }

    /// The entity names and the ``versionHash``.
    public var description: String {
        "<ManagedObjectModel \(entities.map(\.name).joined(separator: ", ")) hash \(versionHash)>"
    }

    // MARK: Loading steps

    private static func resolveInheritance(_ entities: [EntityDescription], byName: [String: EntityDescription]) throws(ModelError) {
        for e in entities {
            guard let s = e.superentityName else { continue }
            guard let sup = byName[s] else {
                throw ModelError(.unknownSuperentity, entity: e.name, "Superentity '\(s)' is not in the model.")
            }
            e.superentity = sup
        }
        for e in entities {
            var seen = Set<ObjectIdentifier>()
            var c: EntityDescription? = e
            while let x = c {
                guard seen.insert(ObjectIdentifier(x)).inserted else {
                    throw ModelError(.inheritanceCycle, entity: e.name, "The superentities of '\(e.name)' form a cycle.")
                }
                c = x.superentity
            }
        }
        for e in entities { e.superentity?.subentities.append(e) }
    }

    private static func depth(_ e: EntityDescription) -> Int {
        var d = 0
        var c = e.superentity
        while let x = c { d += 1; c = x.superentity }
        return d
    }

    private static func resolveProperties(_ entities: [EntityDescription]) throws(ModelError) {
        let byDepth = entities.sorted { depth($0) < depth($1) }
        for e in byDepth {
            var props = e.superentity?.properties ?? []
            var names = Set(props.map(\.name))
            for p in e.ownProperties {
                guard !p.name.isEmpty else {
                    throw ModelError(.invalidName, entity: e.name, "A property name is empty.")
                }
                guard names.insert(p.name).inserted else {
                    throw ModelError(
                        .duplicateProperty, entity: e.name, property: p.name,
                        "Entity '\(e.name)' has two properties named '\(p.name)' (own or inherited).")
                }
                if p.isClaimed {
                    throw ModelError(
                        .entityInAnotherModel, entity: e.name, property: p.name,
                        "Property '\(p.name)' already belongs to another entity; create a new description.")
                }
                p.entity = e
                p.slot = props.count
                if let a = p as? AttributeDescription {
                    if let d = a.defaultValue, !a.type.accepts(d) {
                        throw ModelError(
                            .invalidDefaultValue, entity: e.name, property: p.name,
                            "The default value \(d) is not a valid \(a.type).")
                    }
                    if let pattern = a.validation.regularExpression {
                        do { a.compiledRegex = try NSRegularExpression(pattern: pattern) } catch {
                            throw ModelError(
                                .invalidValidationRule, entity: e.name, property: p.name,
                                "The regular expression '\(pattern)' is invalid.")
                        }
                    }
                }
                props.append(p)
            }
            e.properties = props
            e.propertiesByName = Dictionary(uniqueKeysWithValues: props.map { ($0.name, $0) })
            e.attributes = props.compactMap { $0 as? AttributeDescription }
            e.attributesByName = Dictionary(uniqueKeysWithValues: e.attributes.map { ($0.name, $0) })
            e.relationships = props.compactMap { $0 as? RelationshipDescription }
            e.relationshipsByName = Dictionary(uniqueKeysWithValues: e.relationships.map { ($0.name, $0) })
        }
    }

    private static func resolveRelationships(_ entities: [EntityDescription], byName: [String: EntityDescription]) throws(ModelError) {
        for e in entities {
            for r in e.ownProperties.compactMap({ $0 as? RelationshipDescription }) {
                guard let dest = byName[r.destinationEntityName] else {
                    throw ModelError(
                        .unknownDestination, entity: e.name, property: r.name,
                        "Relationship '\(e.name).\(r.name)' points at entity '\(r.destinationEntityName)', which is not in the model.")
                }
                r.destinationEntity = dest
                guard let inv = r.inverseName else { continue }
                guard let inverse = dest.relationshipsByName[inv] else {
                    throw ModelError(
                        .unknownInverse, entity: e.name, property: r.name,
                        "Relationship '\(e.name).\(r.name)' names inverse '\(inv)', which entity '\(dest.name)' does not have.")
                }
                guard let invDest = byName[inverse.destinationEntityName], e.isKindOf(invDest) || invDest.isKindOf(e),
                    inverse.inverseName == nil || inverse.inverseName == r.name
                else {
                    throw ModelError(
                        .inverseMismatch, entity: e.name, property: r.name,
                        "Relationship '\(e.name).\(r.name)' and its inverse '\(dest.name).\(inv)' do not point at each other.")
                }
                r.inverseRelationship = inverse
            }
        }
        // Pair up one-sided inverse declarations.
        for e in entities {
            for r in e.ownProperties.compactMap({ $0 as? RelationshipDescription }) {
                if let inv = r.inverseRelationship, inv.inverseRelationship == nil { inv.inverseRelationship = r }
            }
        }
        for e in entities {
            for r in e.ownProperties.compactMap({ $0 as? RelationshipDescription }) {
                r.storage = storage(of: r, in: e)
            }
        }
        for e in entities.sorted(by: { depth($0) < depth($1) }) {
            e.foreignKeyRelationships = e.relationships.filter { $0.hasForeignKey && !$0.isTransient }
            e.orderedKeyRelationships = e.relationships.filter(\.keepsOrderInDestinations)
            e.orderedJoinRelationships = e.relationships.filter { r in
                guard r.isToMany, r.isOrdered, !r.isTransient, case .joinTable = r.storage else { return false }
                return true
            }
            for (i, r) in e.foreignKeyRelationships.enumerated() where r.entity === e { r.fkOrdinal = i }
        }
        for e in entities {
            e.storedProperties = e.properties.filter { p in
                if p.isTransient { return false }
                if let r = p as? RelationshipDescription { return r.hasForeignKey }
                return true
            }
            e.storedAttributeSlots = e.storedProperties.filter { $0 is AttributeDescription }.map(\.slot)
            var mask = [Bool](repeating: false, count: e.properties.count)
            for slot in e.storedAttributeSlots { mask[slot] = true }
            e.isStoredAttributeSlot = mask
            let stored = e.attributes.filter { !$0.isTransient }
            e.requiredAttributeSlots = stored.filter { !$0.isOptional }.map(\.slot)
            e.ruledAttributes = stored.filter { !$0.validation.isEmpty }
            e.constrainedRelationships = e.relationships.filter { r in
                !r.isTransient && (r.isToMany ? (r.minCount > 0 || r.maxCount > 0) : !r.isOptional)
            }
        }
    }

    private static func storage(of r: RelationshipDescription, in e: EntityDescription) -> RelationshipStorage {
        let inverse = r.inverseRelationship
        let selfKey = (e.name, r.name)
        let otherKey = (inverse?.entity?.name ?? r.destinationEntityName, inverse?.name ?? "")
        // A to-many relationship that is its own inverse (`friends` ↔ `friends`) has no other
        // side to keep it: every object keeps its own pairs, with itself first in the join table
        // (the table and its columns are the same as before, so existing stores need nothing).
        // A to-one relationship that is its own inverse (`partner` ↔ `partner`) keeps a foreign
        // key on every row, as Core Data does: both rows of a pair hold each other's key (a store
        // whose table lacks the column is given it when it opens; see `StoreLayoutRepair`).
        let isCanonical = inverse === r || selfKey < otherKey
        if !r.isToMany {
            if let inverse, !inverse.isToMany {
                return isCanonical ? .foreignKey : .inverseForeignKey
            }
            return .foreignKey
        }
        if let inverse, !inverse.isToMany { return .inverseForeignKey }
        if let inverse {
            let owner = isCanonical ? selfKey : otherKey
            _ = inverse
            return .joinTable(name: "Z_\(owner.0)_\(owner.1)", sourceIsFirst: isCanonical)
        }
        return .joinTable(name: "Z_\(e.name)_\(r.name)", sourceIsFirst: true)
    }

    private static func checkConstraintsAndIndexes(_ entities: [EntityDescription]) throws(ModelError) {
        for e in entities {
            for constraint in e.uniquenessConstraints {
                for n in constraint {
                    let p = e.propertiesByName[n]
                    let ok =
                        (p is AttributeDescription && !(p?.isTransient ?? true))
                        || ((p as? RelationshipDescription)?.hasForeignKey ?? false)
                    guard ok else {
                        throw ModelError(
                            .unknownConstraintAttribute, entity: e.name, property: n,
                            "Uniqueness constraint [\(constraint.joined(separator: ", "))] of '\(e.name)' names '\(n)', which is not a stored attribute of the entity."
                        )
                    }
                }
            }
            for index in e.indexes {
                for n in index {
                    guard let p = e.propertiesByName[n], e.storedProperties.contains(where: { $0 === p }) else {
                        throw ModelError(
                            .unknownIndexProperty, entity: e.name, property: n,
                            "Index [\(index.joined(separator: ", "))] of '\(e.name)' names '\(n)', which is not a stored property of the entity."
                        )
                    }
                }
            }
        }
    }

    private static func addHierarchy(of e: EntityDescription, to set: inout Set<String>) {
        let root = e.rootEntity
        var stack = [root]
        while let x = stack.popLast() {
            set.insert(x.name)
            stack.append(contentsOf: x.subentities)
        }
    }

    private static func collectDescendants(_ e: EntityDescription, into numbers: inout [Int]) {
        numbers.append(e.entityNumber)
        for s in e.subentities { collectDescendants(s, into: &numbers) }
    }

    /// Everything about an entity that shapes stored data.
    static func canonicalDescription(of e: EntityDescription) -> String {
        var parts = ["entity:\(e.name)", "super:\(e.superentityName ?? "")", "abstract:\(e.isAbstract)"]
        for p in e.properties where !p.isTransient {
            if let a = p as? AttributeDescription {
                parts.append("a:\(a.name):\(a.type):\(a.isOptional)")
            } else if let r = p as? RelationshipDescription {
                parts.append("r:\(r.name):\(r.destinationEntityName):\(r.inverseName ?? ""):\(r.isToMany):\(r.isOrdered)")
            }
        }
        parts.append("unique:" + e.uniquenessConstraints.map { $0.joined(separator: ",") }.joined(separator: "|"))
        parts.append("index:" + e.indexes.map { $0.joined(separator: ",") }.joined(separator: "|"))
        return parts.joined(separator: ";")
    }
}

/// FNV-1a, 64-bit: a stable (not cryptographic) hash for model version hashes and the
/// PostgreSQL store's function definitions.
package enum StableHash {
    package static func hex(_ s: String) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in s.utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        let hex = String(h, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
