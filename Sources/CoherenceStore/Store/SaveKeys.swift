import Foundation

/// The primary keys of one save on one store: the keys its inserts get (temporary IDs get keys
/// reserved per root entity; permanent IDs keep theirs), and the references it writes resolved
/// to keys. Shared by the stores that write rows with SQL.
package struct SaveKeys {
    let storeIdentifier: UUID
    /// The store, for errors.
    let location: String
    /// The changes' inserts.
    private var inserts: [RowInsert] = []
    /// The primary key of each insert, aligned with the inserts.
    package private(set) var insertKeys: [Int64] = []
    /// Temporary ID → permanent ID for objects inserted by this save; built only when a reference
    /// to one of them must be resolved (most saves never need it).
    private var permanentMap: [ObjectID: ObjectID]?
    /// Primary key → temporary IDs of this save's inserts (for reporting uniqueness conflicts).
    private var temporaryByKey: [Int64: [ObjectID]]?

    package init(storeIdentifier: UUID, location: String) {
        self.storeIdentifier = storeIdentifier
        self.location = location
    }

    /// The one reservation `inserts` need when every insert is new and of one root entity (the
    /// usual case): the root and the number of keys; nil otherwise (none, or several).
    package static func singleReservation(for inserts: [RowInsert]) -> (root: EntityDescription, count: Int)? {
        guard let root = inserts.first?.objectID.entity.rootEntity,
            inserts.indices.allSatisfy({ inserts[$0].objectID.isTemporaryID && inserts[$0].objectID.entity.rootEntity === root })
        else { return nil }
        return (root, inserts.count)
    }

    /// Gives every insert its primary key, reserving keys with `allocate(root, count)` (which
    /// returns the first of `count` keys of a root entity).
    package mutating func allocate<E: Error>(
        for inserts: [RowInsert], _ allocate: (EntityDescription, Int) throws(E) -> Int64
    ) throws(E) {
        self.inserts = inserts
        // (By index: iterating the rows would copy each one.)
        insertKeys = inserts.indices.map { inserts[$0].objectID.primaryKey }
        // The usual case, every insert new and of one root entity: one reservation.
        if let (root, count) = Self.singleReservation(for: inserts) {
            let first = try allocate(root, count)
            for n in insertKeys.indices { insertKeys[n] = first + Int64(n) }
            return
        }
        var byRoot: [ObjectIdentifier: (EntityDescription, Int)] = [:]
        var lastRoot: EntityDescription?
        var run = 0
        func flush() {
            if let root = lastRoot { byRoot[ObjectIdentifier(root), default: (root, 0)].1 += run }
        }
        for i in inserts where i.objectID.isTemporaryID {
            let root = i.objectID.entity.rootEntity
            if root === lastRoot { run += 1; continue }
            flush()
            lastRoot = root
            run = 1
        }
        flush()
        guard !byRoot.isEmpty else { return }
        var next: [ObjectIdentifier: Int64] = [:]
        for (key, (root, count)) in byRoot {
            next[key] = try allocate(root, count)
        }
        var lastKey: ObjectIdentifier?
        var pk: Int64 = 0
        for n in inserts.indices where inserts[n].objectID.isTemporaryID {
            let key = ObjectIdentifier(inserts[n].objectID.entity.rootEntity)
            if key != lastKey {
                if let lastKey { next[lastKey] = pk }
                guard let first = next[key] else { continue }
                pk = first
                lastKey = key
            }
            insertKeys[n] = pk
            pk += 1
        }
    }

    /// The IDs of the inserts once saved, aligned with them.
    package func insertedIDs(_ rows: [RowInsert]) -> [ObjectID] {
        rows.withUnsafeBufferPointer { rows in
            var ids: [ObjectID] = []
            ids.reserveCapacity(rows.count)
            for n in 0..<rows.count {
                let id = rows[n].objectID
                ids.append(id.isTemporaryID ? ObjectID(entity: id.entity, storeIdentifier: storeIdentifier, primaryKey: insertKeys[n]) : id)
            }
            return ids
        }
    }

    /// The permanent ID an object inserted by this save got, for its temporary ID.
    package mutating func permanentID(for temporary: ObjectID) -> ObjectID? {
        if permanentMap == nil {
            var map: [ObjectID: ObjectID] = [:]
            map.reserveCapacity(inserts.count)
            for (i, key) in zip(inserts, insertKeys) where i.objectID.isTemporaryID {
                map[i.objectID] = ObjectID(entity: i.objectID.entity, storeIdentifier: storeIdentifier, primaryKey: key)
            }
            permanentMap = map
        }
        return permanentMap?[temporary]
    }

    /// The temporary ID of an object this save inserts with the permanent ID `id`, if any.
    package mutating func temporaryID(for id: ObjectID) -> ObjectID? {
        guard id.storeIdentifier == storeIdentifier else { return nil }
        if temporaryByKey == nil {
            var map: [Int64: [ObjectID]] = [:]
            for (i, key) in zip(inserts, insertKeys) where i.objectID.isTemporaryID { map[key, default: []].append(i.objectID) }
            temporaryByKey = map
        }
        return temporaryByKey?[id.primaryKey]?.first { $0.entity.rootEntity === id.entity.rootEntity }
    }

    /// The primary key for a reference, or nil for no destination.
    package mutating func key(for target: ObjectID?, from source: ObjectID, slot: Int) throws(CoherenceError) -> Int64? {
        guard let target else { return nil }
        if target.isTemporaryID, let p = permanentID(for: target) { return p.primaryKey }
        guard !target.isTemporaryID else {
            let name = source.entity.properties[slot].name
            throw CoherenceError(
                .invalidRequest, "\(source) refers through '\(name)' to \(target), which is not saved and not inserted in this save.",
                entity: source.entity.name, property: name, objectID: source, store: location)
        }
        guard target.storeIdentifier == storeIdentifier else {
            let name = source.entity.properties[slot].name
            var error = CoherenceError(
                .crossStoreRelationship,
                "\(source) refers through '\(name)' to \(target) in another store; relationships cannot cross stores.",
                entity: source.entity.name, property: name, objectID: source, store: location)
            error.destinationStore = "store \(target.storeIdentifier?.uuidString ?? "")"
            throw error
        }
        return target.primaryKey
    }

    /// `values` with the foreign-key slots `references` name set to their destinations' keys.
    package mutating func resolved(
        _ values: [StoredValue], _ references: [RowReference], source: ObjectID
    ) throws(CoherenceError) -> [StoredValue] {
        guard !references.isEmpty else { return values }
        var values = values
        for r in references {
            values[r.slot] = try key(for: r.target, from: source, slot: r.slot).map { .integer($0) } ?? .null
        }
        return values
    }
}
