import Foundation

/// The work of one save on the in-memory store; mirrors the SQLite store's rules.
struct MemoryWriter {
    let store: InMemoryStore
    var conflicts: [SaveConflict] = []
    var permanent: [ObjectID: ObjectID] = [:]

    init(store: InMemoryStore) { self.store = store }

    mutating func write(_ changes: StoreChangeSet, into s: inout InMemoryStore.State) throws(CoherenceError) -> StoreSaveResult {
        var result = StoreSaveResult()
        for i in changes.inserts where i.objectID.isTemporaryID {
            let root = ObjectIdentifier(i.objectID.entity.rootEntity)
            let pk = (s.lastKey[root] ?? 0) + 1
            s.lastKey[root] = pk
            permanent[i.objectID] = ObjectID(entity: i.objectID.entity, storeIdentifier: store.identifier, primaryKey: pk)
        }
        result.insertedIDs = changes.inserts.map { permanent[$0.objectID] ?? $0.objectID }
        result.updatedVersions.reserveCapacity(changes.updates.count)

        for d in changes.deletes {
            let root = ObjectIdentifier(d.objectID.entity.rootEntity)
            guard let row = s.tables[root]?[d.objectID.primaryKey], d.expectedVersion.map({ $0 == row.version }) ?? true else {
                versionConflict(d.objectID, values: d.values, cached: d.values, old: d.expectedVersion ?? 0, in: s)
                continue
            }
            removeUnique(row, from: &s)
            s.tables[root]?[d.objectID.primaryKey] = nil
            // Join rows go with the object (ON DELETE CASCADE in SQLite).
            for r in d.objectID.entity.relationships {
                guard case .joinTable(let name, let sourceIsFirst) = r.storage else { continue }
                s.joins[name] = s.joins[name]?.filter { (sourceIsFirst ? $0.first : $0.second) != d.objectID.primaryKey }
            }
        }
        for u in changes.updates {
            let root = ObjectIdentifier(u.objectID.entity.rootEntity)
            guard var row = s.tables[root]?[u.objectID.primaryKey], u.expectedVersion.map({ $0 == row.version }) ?? true else {
                let values = (try? resolved(u.values, u.references, source: u.objectID)) ?? u.values
                versionConflict(u.objectID, values: values, cached: u.cachedValues, old: u.expectedVersion ?? 0, in: s)
                result.updatedVersions.append(0)  // a conflict: the save fails
                continue
            }
            let values = try resolved(u.values, u.references, source: u.objectID)
            let stored = Set(u.objectID.entity.storedProperties.map { $0.slot })
            var candidate = row
            for slot in u.changedSlots where stored.contains(slot) { candidate.values[slot] = values[slot] }
            candidate.version = SQLGenerator.nextVersion(after: row.version)
            removeUnique(row, from: &s)
            if let conflict = uniquenessConflict(candidate, id: u.objectID, cached: u.cachedValues, old: row.version, in: s) {
                conflicts.append(conflict)
                addUnique(row, to: &s)
                result.updatedVersions.append(0)  // a conflict: the save fails
                continue
            }
            row = candidate
            addUnique(row, to: &s)
            s.tables[root]?[u.objectID.primaryKey] = row
            result.updatedVersions.append(row.version)
        }
        for i in changes.inserts {
            let id = permanent[i.objectID] ?? i.objectID
            // A permanent key that names a stored row (an object inserted again after its
            // context was reset) is refused, as a SQL store's primary key refuses it: the row
            // is never replaced.
            if !i.objectID.isTemporaryID, s.tables[ObjectIdentifier(id.entity.rootEntity)]?[id.primaryKey] != nil {
                throw CoherenceError(
                    .conflict, "\(id) cannot be inserted: the store holds a row with its key.", entity: id.entity.name, objectID: id,
                    store: store.locationDescription)
            }
            var values = try resolved(i.values, i.references, source: id)
            // Foreign keys come from the references only (an insert lists the set ones).
            for r in id.entity.foreignKeyRelationships where !i.references.contains(where: { $0.slot == r.slot }) { values[r.slot] = .null }
            var full = id.entity.initialValues
            for p in id.entity.storedProperties { full[p.slot] = values[p.slot] }
            let row = StoreRow(entity: id.entity, primaryKey: id.primaryKey, version: 1, values: full)
            // The conflict names the object as the caller knows it (its temporary ID).
            if let conflict = uniquenessConflict(row, id: i.objectID, cached: nil, old: 0, in: s) {
                conflicts.append(conflict)
                continue
            }
            addUnique(row, to: &s)
            s.tables[ObjectIdentifier(id.entity.rootEntity), default: [:]][id.primaryKey] = row  // version 1
        }
        for j in changes.joinDeletes {
            guard case .joinTable(let name, let sourceIsFirst) = j.relationship.storage,
                let src = try key(j.source, from: j.source, property: j.relationship.name),
                let dst = try key(j.destination, from: j.source, property: j.relationship.name)
            else { continue }
            s.joins[name]?.remove(sourceIsFirst ? .init(first: src, second: dst) : .init(first: dst, second: src))
        }
        for j in changes.joinInserts {
            guard case .joinTable(let name, let sourceIsFirst) = j.relationship.storage,
                let src = try key(j.source, from: j.source, property: j.relationship.name),
                let dst = try key(j.destination, from: j.source, property: j.relationship.name)
            else { continue }
            s.joins[name, default: []].insert(sourceIsFirst ? .init(first: src, second: dst) : .init(first: dst, second: src))
        }
        for o in changes.orders { try order(o, into: &s) }
        return result
    }

    /// Writes the places of an ordered relationship's destinations (see ``OrderChange``): only
    /// of rows that name the source, as the SQL stores' statements do.
    private func order(_ o: OrderChange, into s: inout InMemoryStore.State) throws(CoherenceError) {
        let r = o.relationship
        guard let inverse = r.inverseRelationship, let dest = r.destinationEntity,
            let source = try key(o.source, from: o.source, property: r.name)
        else { return }
        let root = ObjectIdentifier(dest.rootEntity)
        let name = InMemoryStore.orderKey(r)
        var places = s.orders[name] ?? [:]
        // The last place among the source's other rows, found by one pass over the table (at
        // the first appended row); each later appended row goes right after the one before.
        var last: Int64?
        for (n, d) in o.destinations.enumerated() {
            guard let pk = try key(d, from: o.source, property: r.name), let row = s.tables[root]?[pk],
                row.values[inverse.slot] == .integer(source)
            else { continue }
            if o.appends {
                let previous =
                    last
                    ?? (s.tables[root]?.values ?? Dictionary<Int64, StoreRow>().values).reduce(Int64(-1)) { m, other in
                        guard other.primaryKey != pk, other.values[inverse.slot] == .integer(source),
                            let place = places[other.primaryKey]
                        else { return m }
                        return max(m, place)
                    }
                places[pk] = previous + 1
                last = previous + 1
            } else {
                places[pk] = Int64(n)
            }
        }
        s.orders[name] = places
    }

    private func key(_ target: ObjectID?, from source: ObjectID, property: String) throws(CoherenceError) -> Int64? {
        guard let target else { return nil }
        if let p = permanent[target] { return p.primaryKey }
        guard !target.isTemporaryID else {
            throw CoherenceError(
                .invalidRequest, "\(source) refers through '\(property)' to \(target), which is not saved and not inserted in this save.",
                entity: source.entity.name, property: property, objectID: source, store: store.locationDescription)
        }
        guard target.storeIdentifier == store.identifier else {
            var error = CoherenceError(
                .crossStoreRelationship,
                "\(source) refers through '\(property)' to \(target) in another store; relationships cannot cross stores.",
                entity: source.entity.name, property: property, objectID: source, store: store.locationDescription)
            error.destinationStore = "store \(target.storeIdentifier?.uuidString ?? "")"
            throw error
        }
        return target.primaryKey
    }

    private func resolved(_ values: [StoredValue], _ references: [RowReference], source: ObjectID) throws(CoherenceError) -> [StoredValue] {
        var values = values
        for r in references {
            values[r.slot] = try key(r.target, from: source, property: source.entity.properties[r.slot].name).map { .integer($0) } ?? .null
        }
        return values
    }

    private mutating func versionConflict(
        _ id: ObjectID, values: [StoredValue], cached: [StoredValue]?, old: Int64, in s: InMemoryStore.State
    ) {
        // (A row of another entity in the same table is not this object's.)
        let row = s.tables[ObjectIdentifier(id.entity.rootEntity)]?[id.primaryKey].flatMap { $0.entity.isKindOf(id.entity) ? $0 : nil }
        conflicts.append(
            SaveConflict(
                kind: .version, objectID: id, objectValues: values, cachedValues: cached,
                persistedValues: row?.values, oldVersion: old, newVersion: row?.version ?? 0))
    }

    /// The constraints that apply to a row: those of its entity and its ancestors.
    private static func constraints(of entity: EntityDescription) -> [(EntityDescription, [String])] {
        var result: [(EntityDescription, [String])] = []
        var e: EntityDescription? = entity
        while let x = e {
            for c in x.uniquenessConstraints { result.append((x, c)) }
            e = x.superentity
        }
        return result
    }

    /// The row's values for a constraint, or nil when any is null (nulls never conflict).
    private static func uniqueValues(_ row: StoreRow, _ declaring: EntityDescription, _ constraint: [String]) -> [StoredValue]? {
        var values: [StoredValue] = []
        for name in constraint {
            guard let p = declaring.propertiesByName[name] else { return nil }
            let v = row.values[p.slot]
            if v.isNull { return nil }
            values.append(v)
        }
        return values
    }

    private func uniquenessConflict(
        _ row: StoreRow, id: ObjectID, cached: [StoredValue]?, old: Int64,
        in s: InMemoryStore.State
    ) -> SaveConflict? {
        guard let (constraint, otherRow) = Self.collisions(of: row, in: s).first else { return nil }
        var otherID = ObjectID(entity: otherRow.entity, storeIdentifier: store.identifier, primaryKey: otherRow.primaryKey)
        otherID = permanent.first(where: { $0.value == otherID })?.key ?? otherID
        return SaveConflict(
            kind: .uniqueness, objectID: id, objectValues: row.values, cachedValues: cached,
            persistedValues: otherRow.values, oldVersion: old, newVersion: otherRow.version,
            constraint: constraint, conflictingObjectIDs: [otherID])
    }

    /// The other rows holding a row's values for one of its uniqueness constraints: one per
    /// constraint that collides, in the order of ``constraints(of:)``.
    static func collisions(of row: StoreRow, in s: InMemoryStore.State) -> [(constraint: [String], other: StoreRow)] {
        var result: [(constraint: [String], other: StoreRow)] = []
        for (declaring, constraint) in constraints(of: row.entity) {
            guard let values = uniqueValues(row, declaring, constraint),
                let other = s.unique[InMemoryStore.uniqueKey(declaring, constraint)]?[values], other != row.primaryKey,
                let otherRow = s.tables[ObjectIdentifier(row.entity.rootEntity)]?[other]
            else { continue }
            result.append((constraint, otherRow))
        }
        return result
    }

    func addUnique(_ row: StoreRow, to s: inout InMemoryStore.State) {
        for (declaring, constraint) in Self.constraints(of: row.entity) {
            guard let values = Self.uniqueValues(row, declaring, constraint) else { continue }
            s.unique[InMemoryStore.uniqueKey(declaring, constraint), default: [:]][values] = row.primaryKey
        }
    }

    func removeUnique(_ row: StoreRow, from s: inout InMemoryStore.State) {
        for (declaring, constraint) in Self.constraints(of: row.entity) {
            guard let values = Self.uniqueValues(row, declaring, constraint) else { continue }
            let key = InMemoryStore.uniqueKey(declaring, constraint)
            if s.unique[key]?[values] == row.primaryKey { s.unique[key]?[values] = nil }
        }
    }
}
