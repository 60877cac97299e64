import Foundation

/// What a store's tables hold, recorded in its metadata (`schema`, as JSON) when the store is
/// created or migrated: the entities with their numbers, tables, columns and how relationships
/// are kept. An inferred migration compares it with the new model, without needing the model
/// the store was made with.
package struct StoredSchema: Codable, Sendable, Equatable {
    package struct Attribute: Codable, Sendable, Equatable {
        package var name: String
        /// ``AttributeType/description`` (`Integer 64`, `String`, …).
        package var type: String
        package var isOptional: Bool
    }

    package struct Relationship: Codable, Sendable, Equatable {
        package var name: String
        package var destination: String
        /// The inverse relationship's name, if any.
        package var inverse: String?
        package var isToMany: Bool
        /// `fk` (a column on this entity's table), `inverse` (the inverse's column) or `join`.
        package var storage: String
        /// The join table, for `join`.
        package var joinTable: String?
        /// Whether this side's key is the join table's `Z_1` column, for `join`.
        package var sourceIsFirst: Bool?
    }

    package struct Entity: Codable, Sendable, Equatable {
        package var name: String
        package var number: Int
        /// The root entity, whose name is the table's.
        package var root: String
        package var superentity: String?
        package var isAbstract: Bool
        package var versionHash: String
        /// The stored attributes declared by this entity (not inherited).
        package var attributes: [Attribute]
        /// The stored relationships declared by this entity (not inherited).
        package var relationships: [Relationship]
        package var uniquenessConstraints: [[String]]
        package var indexes: [[String]]
    }

    package var entities: [Entity]

    /// The schema of a store holding `entities` of `model`.
    package init(entities: [EntityDescription], model: ManagedObjectModel) {
        self.entities = entities.map { e in
            Entity(
                name: e.name, number: e.entityNumber, root: e.rootEntity.name, superentity: e.superentity?.name,
                isAbstract: e.isAbstract, versionHash: model.entityVersionHashes[e.name] ?? "",
                attributes: e.ownProperties.compactMap { p in
                    guard let a = p as? AttributeDescription, !a.isTransient else { return nil }
                    return Attribute(name: a.name, type: a.type.description, isOptional: a.isOptional)
                },
                relationships: e.ownProperties.compactMap { p in
                    guard let r = p as? RelationshipDescription, !r.isTransient else { return nil }
                    var stored = Relationship(
                        name: r.name, destination: r.destinationEntityName, inverse: r.inverseRelationship?.name,
                        isToMany: r.isToMany, storage: "fk")
                    switch r.storage {
                    case .foreignKey: break
                    case .inverseForeignKey: stored.storage = "inverse"
                    case .joinTable(let name, let sourceIsFirst):
                        stored.storage = "join"
                        stored.joinTable = name
                        stored.sourceIsFirst = sourceIsFirst
                    }
                    return stored
                },
                uniquenessConstraints: e.uniquenessConstraints, indexes: e.indexes)
        }
    }

    /// The schema as recorded in metadata.
    package var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return "" }
        return String(decoding: data, as: UTF8.self)
    }

    /// A schema read back from metadata (nil when missing or unreadable).
    package init?(json: String?) {
        guard let json, let decoded = try? JSONDecoder().decode(StoredSchema.self, from: Data(json.utf8)) else { return nil }
        self = decoded
    }

    package var entitiesByName: [String: Entity] { Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a }) }

    /// An entity and its superentities, root first.
    package func chain(of name: String) -> [Entity] {
        let byName = entitiesByName
        var chain: [Entity] = []
        var current = byName[name]
        while let e = current, chain.count <= entities.count {
            chain.insert(e, at: 0)
            current = e.superentity.flatMap { byName[$0] }
        }
        return chain
    }

    /// An entity's stored attributes, inherited ones included.
    package func allAttributes(of name: String) -> [Attribute] { chain(of: name).flatMap(\.attributes) }

    /// An entity's stored relationships, inherited ones included, with the entity declaring each.
    package func allRelationships(of name: String) -> [(declaredBy: String, relationship: Relationship)] {
        chain(of: name).flatMap { e in e.relationships.map { (e.name, $0) } }
    }
}

extension StoredSchema {
    /// The metadata keys that record a model version in a store holding `entities`:
    /// `schema`, `entityVersionHashes` (JSON, entity name → hash) and `versionIdentifier`.
    package static func versionMetadata(entities: [EntityDescription], model: ManagedObjectModel) -> [String: String] {
        var hashes: [String: String] = [:]
        for e in entities { hashes[e.name] = model.entityVersionHashes[e.name] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var result = [
            "schema": StoredSchema(entities: entities, model: model).json,
            "entityVersionHashes": (try? encoder.encode(hashes)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        ]
        if let v = model.versionIdentifier { result["versionIdentifier"] = v }
        return result
    }
}
