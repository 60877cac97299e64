import Foundation

extension SQLiteStore {
    /// Writes a change set inside a new write transaction and leaves the transaction open for
    /// ``commitSave()``; on any conflict or error the transaction is rolled back and nothing is
    /// written.
    ///
    /// Order: allocate keys for new objects, deletes, updates, inserts, join-table changes. Each
    /// statement is prepared once per save and reused for every row.
    package func beginSave(_ changes: StoreChangeSet) throws(CoherenceError) -> StoreSaveResult {
        let c = try writerConnection()
        do {
            try c.cachedStatement("BEGIN IMMEDIATE").execute()
        } catch {
            throw storeError(error, "Starting the save transaction failed")
        }
        do {
            var writer = SaveWriter(store: self, connection: c)
            let result = try writer.write(changes)
            if !writer.conflicts.isEmpty {
                rollbackSave()
                var error = CoherenceError(.conflict, "The save has \(writer.conflicts.count) conflict(s).", store: url.path)
                error.conflicts = writer.conflicts
                throw error
            }
            return result
        } catch let error as CoherenceError {
            rollbackSave()
            throw error
        } catch {
            rollbackSave()
            throw storeError(error, "Saving failed")
        }
    }

    package func commitSave() throws(CoherenceError) {
        let c = try writerConnection()
        do {
            try c.cachedStatement("COMMIT").execute()
        } catch {
            rollbackSave()
            throw storeError(error, "Committing the save failed")
        }
    }

    package func rollbackSave() {
        // Keys reserved in this transaction are given back with it.
        forgetReservedKeys()
        guard let c = try? writerConnection(), c.isInTransaction else { return }
        try? c.cachedStatement("ROLLBACK").execute()
    }

    fileprivate func writerConnection() throws(CoherenceError) -> SQLiteConnection {
        try writerConnectionForSave()
    }
}

/// The work of one save on one SQLite store.
private struct SaveWriter {
    let store: SQLiteStore
    let connection: SQLiteConnection
    var generator: SQLGenerator { store.generator }
    var conflicts: [SaveConflict] = []
    /// Temporary ID → permanent ID for objects inserted by this save.
    var permanent: [ObjectID: ObjectID] = [:]
    /// The last UPDATE shape and its statement: consecutive rows usually share it, so they skip
    /// the SQL and statement lookups.
    var lastUpdate: (entity: ObjectIdentifier, slots: [Int], check: Bool, properties: [PropertyDescription], statement: SQLiteStatement)?
    /// The last DELETE statement, likewise.
    var lastDelete: (entity: ObjectIdentifier, check: Bool, statement: SQLiteStatement)?

    init(store: SQLiteStore, connection: SQLiteConnection) {
        self.store = store
        self.connection = connection
    }

    mutating func write(_ changes: StoreChangeSet) throws -> StoreSaveResult {
        var result = StoreSaveResult()
        try allocateKeys(for: changes.inserts)
        result.permanentIDs = permanent

        for d in changes.deletes { try delete(d) }
        // In primary-key order: the rows' pages are then visited once each, in order.
        let updates = changes.updates
        for index in updates.indices.sorted(by: { updates[$0].objectID.primaryKey < updates[$1].objectID.primaryKey }) {
            let u = updates[index]
            if let v = try update(u) { result.versions[u.objectID] = v }
        }
        var lastEntity: EntityDescription?
        var insertStatement: SQLiteStatement?
        for i in changes.inserts {
            let id = permanent[i.objectID] ?? i.objectID
            if i.objectID.entity !== lastEntity {
                let entity = i.objectID.entity
                insertStatement = try connection.cachedStatement(store.sql(.insert(ObjectIdentifier(entity))) { generator.insert(entity) })
                lastEntity = i.objectID.entity
            }
            guard let st = insertStatement else { continue }
            try insert(i, id: id, statement: st)   // new rows are version 1
        }
        for j in changes.joinDeletes { try join(j, insert: false) }
        for j in changes.joinInserts { try join(j, insert: true) }
        return result
    }

    private mutating func allocateKeys(for inserts: [RowInsert]) throws {
        var byRoot: [ObjectIdentifier: (EntityDescription, Int)] = [:]
        for i in inserts where i.objectID.isTemporaryID {
            let root = i.objectID.entity.rootEntity
            byRoot[ObjectIdentifier(root), default: (root, 0)].1 += 1
        }
        var next: [ObjectIdentifier: Int64] = [:]
        for (key, (root, count)) in byRoot {
            next[key] = try store.allocateKeys(for: root, count: count)
        }
        for i in inserts where i.objectID.isTemporaryID {
            let key = ObjectIdentifier(i.objectID.entity.rootEntity)
            guard let pk = next[key] else { continue }
            next[key] = pk + 1
            permanent[i.objectID] = ObjectID(entity: i.objectID.entity, storeIdentifier: store.identifier, primaryKey: pk)
        }
    }

    /// The primary key for a reference, or nil for no destination.
    private func key(for target: ObjectID?, from source: ObjectID, slot: Int) throws -> Int64? {
        guard let target else { return nil }
        if let p = permanent[target] { return p.primaryKey }
        guard !target.isTemporaryID else {
            let name = source.entity.properties[slot].name
            throw CoherenceError(.invalidRequest, "\(source) refers through '\(name)' to \(target), which is not saved and not inserted in this save.",
                                 entity: source.entity.name, property: name, objectID: source, store: store.url.path)
        }
        guard target.storeIdentifier == store.identifier else {
            let name = source.entity.properties[slot].name
            throw CoherenceError(.invalidRequest, "\(source) refers through '\(name)' to \(target) in another store; relationships cannot cross stores.",
                                 entity: source.entity.name, property: name, objectID: source, store: store.url.path)
        }
        return target.primaryKey
    }

    private func resolved(_ values: [StoredValue], _ references: [RowReference], source: ObjectID) throws -> [StoredValue] {
        guard !references.isEmpty else { return values }
        var values = values
        for r in references {
            values[r.slot] = try key(for: r.target, from: source, slot: r.slot).map { .integer($0) } ?? .null
        }
        return values
    }

    private mutating func insert(_ row: RowInsert, id: ObjectID, statement st: SQLiteStatement) throws {
        let entity = id.entity
        let values = try resolved(row.values, row.references, source: id)
        st.bind(id.primaryKey, at: 1)
        st.bind(Int64(entity.entityNumber), at: 2)
        st.bind(Int64(1), at: 3)
        var index: Int32 = 4
        for p in entity.storedProperties {
            st.bind(values[p.slot], at: index)
            index += 1
        }
        do {
            try st.execute()
        } catch {
            // `error` is a SQLiteError here (typed throws).
            guard error.isUniqueConstraintViolation else { throw error }
            try recordUniquenessConflict(id: id, values: values, cached: nil, oldVersion: 0, reportAs: row.objectID)
        }
    }

    /// Runs an UPDATE; returns the new version, or nil when a conflict was recorded.
    private mutating func update(_ u: RowUpdate) throws -> Int64? {
        let entity = u.objectID.entity
        let values = try resolved(u.values, u.references, source: u.objectID)
        let slots = u.changedSlots   // ascending: built in property order
        let check = u.expectedVersion != nil
        let entityKey = ObjectIdentifier(entity)
        let properties: [PropertyDescription]
        let st: SQLiteStatement
        if let last = lastUpdate, last.entity == entityKey, last.check == check, last.slots == slots {
            properties = last.properties
            st = last.statement
        } else {
            properties = slots.map { entity.properties[$0] }.filter { p in
                p.isTransient ? false : ((p as? RelationshipDescription)?.hasForeignKey ?? true)
            }
            let sql = store.sql(.update(entityKey, slots: slots, checkVersion: check)) {
                // With a version check the new version is the expected one plus one: no RETURNING,
                // which costs SQLite a temporary table per row.
                generator.update(entity, properties: properties, checkVersion: check, returningVersion: !check)
            }
            st = try connection.cachedStatement(sql)
            lastUpdate = (entityKey, slots, check, properties, st)
        }
        defer { st.reset() }
        var index: Int32 = 1
        for p in properties {
            st.bind(values[p.slot], at: index)
            index += 1
        }
        st.bind(u.objectID.primaryKey, at: index)
        if let v = u.expectedVersion { st.bind(v, at: index + 1) }
        do {
            if let expected = u.expectedVersion {
                _ = try st.step()
                if connection.changes == 1 { return expected + 1 }
            } else if try st.step() {
                return st.int64(0)
            }
        } catch {
            // `error` is a SQLiteError here (typed throws).
            guard error.isUniqueConstraintViolation else { throw error }
            try recordUniquenessConflict(id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0)
            return nil
        }
        try recordVersionConflict(id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0)
        return nil
    }

    private mutating func delete(_ d: RowDelete) throws {
        let entity = d.objectID.entity, check = d.expectedVersion != nil
        let entityKey = ObjectIdentifier(entity)
        let st: SQLiteStatement
        if let last = lastDelete, last.entity == entityKey, last.check == check {
            st = last.statement
        } else {
            st = try connection.cachedStatement(store.sql(.delete(entityKey, checkVersion: check)) {
                generator.delete(entity, checkVersion: check)
            })
            lastDelete = (entityKey, check, st)
        }
        st.bind(d.objectID.primaryKey, at: 1)
        if let v = d.expectedVersion { st.bind(v, at: 2) }
        try st.execute()
        if connection.changes == 0 {
            try recordVersionConflict(id: d.objectID, values: d.values, cached: d.values, oldVersion: d.expectedVersion ?? 0)
        }
    }

    private mutating func join(_ j: JoinChange, insert: Bool) throws {
        guard let sql = insert ? generator.insertJoin(j.relationship) : generator.deleteJoin(j.relationship) else {
            throw CoherenceError(.invalidRequest, "Relationship '\(j.relationship.name)' has no join table.", property: j.relationship.name)
        }
        let slot = j.relationship.slot
        guard let source = try key(for: j.source, from: j.source, slot: slot),
              let destination = try key(for: j.destination, from: j.source, slot: slot) else { return }
        let st = try connection.cachedStatement(sql)
        st.bind(source, at: 1)
        st.bind(destination, at: 2)
        try st.execute()
    }

    // MARK: Conflicts

    /// The current version and values of a row, or nil when it does not exist.
    private func current(_ id: ObjectID) throws -> StoreRow? {
        let plan = store.plan(for: id.entity.rootEntity)
        let st = try connection.cachedStatement(generator.selectOne(id.entity, plan: plan))
        defer { st.reset() }
        st.bind(id.primaryKey, at: 1)
        guard try st.step() else { return nil }
        let number = Int(st.int64(1))
        guard let entity = plan.entities[number], let mapping = plan.mapping[number] else { return nil }
        var values = entity.initialValues
        for (column, slot) in mapping { values[slot] = st.value(column) }
        return StoreRow(entity: entity, primaryKey: id.primaryKey, version: st.int64(2), values: values)
    }

    private mutating func recordVersionConflict(id: ObjectID, values: [StoredValue], cached: [StoredValue]?, oldVersion: Int64) throws {
        let row = try current(id)
        conflicts.append(SaveConflict(kind: .version, objectID: id, objectValues: values, cachedValues: cached,
                                      persistedValues: row?.values, oldVersion: oldVersion, newVersion: row?.version ?? 0))
    }

    /// `reportAs`: the ID the conflict names (an insert's temporary ID, as the caller knows it).
    private mutating func recordUniquenessConflict(id: ObjectID, values: [StoredValue], cached: [StoredValue]?, oldVersion: Int64,
                                                   reportAs: ObjectID? = nil) throws {
        var found = false
        var entity: EntityDescription? = id.entity
        while let e = entity {
            for constraint in e.uniquenessConstraints {
                let properties = constraint.compactMap { e.propertiesByName[$0] }
                let st = try connection.cachedStatement(generator.selectUniquenessMatches(id.entity, constraint: properties, declaringEntity: e))
                defer { st.reset() }
                for (i, p) in properties.enumerated() { st.bind(values[p.slot], at: Int32(i + 1)) }
                var others: [ObjectID] = []
                while try st.step() {
                    let pk = st.int64(0)
                    guard pk != id.primaryKey else { continue }
                    let other = e.managedObjectModel?.entities.first { $0.entityNumber == Int(st.int64(1)) } ?? e
                    let otherID = ObjectID(entity: other, storeIdentifier: store.identifier, primaryKey: pk)
                    others.append(permanent.first(where: { $0.value == otherID })?.key ?? otherID)
                }
                if !others.isEmpty {
                    found = true
                    let row = try others.first.flatMap { o in try current(permanent[o] ?? o) }
                    conflicts.append(SaveConflict(kind: .uniqueness, objectID: reportAs ?? id, objectValues: values, cachedValues: cached,
                                                  persistedValues: row?.values, oldVersion: oldVersion, newVersion: row?.version ?? 0,
                                                  constraint: constraint, conflictingObjectIDs: others))
                }
            }
            entity = e.superentity
        }
        if !found {
            throw CoherenceError(.conflict, "A uniqueness constraint failed for \(id), but no conflicting row was found.",
                                 entity: id.entity.name, objectID: id, store: store.url.path)
        }
    }
}
