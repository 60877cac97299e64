import Foundation

extension PersistentStoreCoordinator {
    /// The IDs of the objects a request matches.
    /// - Throws: `.noStoreForEntity` when no attached store holds the entity (as a save of it
    ///   does), and errors of the request or the stores.
    public func fetchObjectIDs<T: ManagedObject>(_ request: FetchRequest<T>) throws(CoherenceError) -> [ObjectID] {
        let fetch = try request.storeFetch(in: managedObjectModel)
        let stores = try readStores(for: fetch.entity)
        if stores.count == 1, let store = stores.first {
            let byNumber = Dictionary(uniqueKeysWithValues: SQLGenerator.hierarchy(of: fetch.entity).map { ($0.entityNumber, $0) })
            return try store.engine.fetchKeys(fetch).compactMap { key in
                byNumber[key.entityNumber].map { ObjectID(entity: $0, storeIdentifier: store.identifier, primaryKey: key.primaryKey) }
            }
        }
        return try fetchRows(fetch).map(\.id)
    }

    /// The number of objects a request matches (limit and offset applied).
    /// - Throws: `.noStoreForEntity` when no attached store holds the entity.
    public func count<T: ManagedObject>(for request: FetchRequest<T>) throws(CoherenceError) -> Int {
        try count(try request.storeFetch(in: managedObjectModel))
    }

    /// The matching objects as dictionaries of `request.propertiesToFetch` (every attribute when
    /// nil): attributes as their Swift values, to-one relationships as ``ObjectID``s. Nil values
    /// are left out, as in Core Data.
    /// - Throws: `.noStoreForEntity` when no attached store holds the entity.
    public func fetchDictionaries<T: ManagedObject>(_ request: FetchRequest<T>) throws(CoherenceError) -> [[String: any Sendable]] {
        let fetch = try request.storeFetch(in: managedObjectModel)
        let properties: [PropertyDescription]
        if let names = request.propertiesToFetch {
            properties = try names.map { (name: String) throws(CoherenceError) -> PropertyDescription in
                guard let p = fetch.entity.propertiesByName[name], !((p as? RelationshipDescription)?.isToMany ?? false) else {
                    throw CoherenceError(
                        .unknownKey, "'\(name)' is not an attribute or to-one relationship of '\(fetch.entity.name)'.",
                        entity: fetch.entity.name, property: name)
                }
                if p.isTransient {
                    throw CoherenceError(
                        .unknownKey,
                        "'\(name)' of '\(fetch.entity.name)' is transient, so it is not stored: a dictionary fetch cannot read it.",
                        entity: fetch.entity.name, property: name)
                }
                return p
            }
        } else {
            properties = fetch.entity.attributes.filter { !$0.isTransient }
        }
        let rows = try fetchRows(fetch)
        var toOneTargets: [ObjectIdentifier: [Int64: ObjectID]] = [:]
        for case let r as RelationshipDescription in properties where !r.hasForeignKey {
            // One-to-one stored on the other side: look the keys up in one query.
            let related = try self.related(r, of: rows.map(\.id))
            toOneTargets[ObjectIdentifier(r)] = Dictionary(
                uniqueKeysWithValues: related.compactMap { k, v in v.first.map { (k.primaryKey, $0) } })
        }
        return rows.map { id, row in
            var d: [String: any Sendable] = [:]
            for p in properties {
                if let a = p as? AttributeDescription {
                    if let v = ManagedObject.swiftValue(row.values[a.slot], type: a.type) { d[a.name] = v }
                } else if let r = p as? RelationshipDescription {
                    if r.hasForeignKey {
                        if case .integer(let fk) = row.values[r.slot], let dest = r.destinationEntity {
                            d[r.name] = ObjectID(entity: dest, storeIdentifier: id.storeIdentifier, primaryKey: fk)
                        }
                    } else if let target = toOneTargets[ObjectIdentifier(r)]?[row.primaryKey] {
                        d[r.name] = target
                    }
                }
            }
            return d
        }
    }
}
