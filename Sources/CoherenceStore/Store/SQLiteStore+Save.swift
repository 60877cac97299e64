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
            throw storeError(.storeWriteFailed, error, "Starting the save transaction failed")
        }
        do {
            try refuseWritesToAChangedStore(c)
            var writer = SaveWriter(store: self, connection: c)
            // With history, the tombstones of deleted objects are read before their rows go.
            var history = try tracksHistory ? SaveHistory(changes) { ids in try storedValues(of: ids, on: c) } : nil
            let result = try writer.write(changes)
            try keepCoreDataColumns(c, after: changes)
            if !writer.conflicts.isEmpty {
                rollbackSave()
                var error = CoherenceError(.conflict, "The save has \(writer.conflicts.count) conflict(s).", store: path)
                error.conflicts = writer.conflicts
                throw error
            }
            if let record = history?.record(for: changes, result: result) { try recordHistory(record) }
            // A commit that would fail fails here, while every store of the save can still
            // roll back (the stores before this one have not committed yet).
            try c.checkDeferredForeignKeys()
            return result
        } catch let error as CoherenceError {
            rollbackSave()
            throw error
        } catch {
            rollbackSave()
            throw storeError(.storeWriteFailed, error, "Saving failed")
        }
    }

    package func commitSave() throws(CoherenceError) {
        let c = try writerConnection()
        do {
            try c.cachedStatement("COMMIT").execute()
        } catch {
            rollbackSave()
            throw storeError(.storeWriteFailed, error, "Committing the save failed")
        }
        if tracksHistory { historyCommitted() }
    }

    package func rollbackSave() {
        // Keys reserved in this transaction are given back with it, and so is its history.
        forgetReservedKeys()
        if tracksHistory { historyRolledBack() }
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
    /// The inserts' keys and the references resolved to keys.
    var keys: SaveKeys
    /// The last UPDATE shape and its statement: consecutive rows usually share it, so they skip
    /// the SQL and statement lookups. Kept as separate fields, compared and read in place: a
    /// tuple bound per row was a copy (three retains and three releases per updated row).
    var lastUpdateEntity: ObjectIdentifier?
    var lastUpdateCheck = false
    var lastUpdateSlots: [Int] = []
    /// The properties the last UPDATE binds, in order.
    var lastUpdateProperties: [PropertyDescription] = []
    var lastUpdateStatement: SQLiteStatement?
    /// The last DELETE statement, likewise.
    var lastDelete: (entity: ObjectIdentifier, check: Bool, statement: SQLiteStatement)?

    /// An entity's INSERT statement on this connection, with its binding layout.
    struct InsertPlan {
        let entity: EntityDescription
        let statement: SQLiteStatement
        let layout: InsertLayout
    }

    init(store: SQLiteStore, connection: SQLiteConnection) {
        self.store = store
        self.connection = connection
        self.keys = SaveKeys(storeIdentifier: store.identifier, location: store.path)
    }

    mutating func write(_ changes: StoreChangeSet) throws -> StoreSaveResult {
        var result = StoreSaveResult()
        let store = self.store
        try keys.allocate(for: changes.inserts) { root, count throws(CoherenceError) in try store.allocateKeys(for: root, count: count) }

        // Read in place (iterating would copy each row and retain its values).
        try changes.deletes.withUnsafeBufferPointer { rows in
            guard let base = rows.baseAddress else { return }
            for n in 0..<rows.count { try delete(base + n) }
        }
        // In primary-key order: the rows' pages are then visited once each, in order (the
        // context lists updated objects in hash order). Results stay aligned with the change set.
        let updates = changes.updates
        result.updatedVersions = Array(repeating: 0, count: updates.count)
        // Rows are borrowed from the change set (no copy of each row's arrays). Whether they
        // are in key order is usually known from the change set (no pass over them to check).
        try updates.withUnsafeBufferPointer { rows in
            guard let base = rows.baseAddress else { return }
            let inOrder =
                changes.updatesInKeyOrder
                ?? rows.indices.dropFirst().allSatisfy { rows[$0 - 1].objectID.primaryKey <= rows[$0].objectID.primaryKey }
            if inOrder {
                for index in rows.indices {
                    // A conflict is recorded and the save fails below; 0 keeps the array aligned.
                    result.updatedVersions[index] = try update(base + index) ?? 0
                }
            } else {
                let order = rows.indices.sorted { rows[$0].objectID.primaryKey < rows[$1].objectID.primaryKey }
                for index in order { result.updatedVersions[index] = try update(base + index) ?? 0 }
            }
        }
        // Inserts too are read in place, through pointers (iterating the array would copy each
        // row and retain its arrays).
        let insertRows = changes.inserts
        try insertRows.withUnsafeBufferPointer { rows in
            guard let base = rows.baseAddress else { return }
            var plan: InsertPlan?
            for n in 0..<rows.count {
                let entity = base[n].objectID.entity
                if plan?.entity !== entity { plan = try insertPlan(for: entity) }
                guard let plan else { continue }
                try insert(base + n, primaryKey: keys.insertKeys[n], plan: plan)  // new rows are version 1
            }
        }
        // With a conflict the save fails: the join rows are not written (a destination whose
        // row is gone is then a conflict, not a foreign-key failure).
        guard conflicts.isEmpty else { return result }
        for j in changes.joinDeletes { try join(j, insert: false) }
        for j in changes.joinInserts { try join(j, insert: true) }
        for o in changes.orders { try order(o) }
        result.insertedIDs = keys.insertedIDs(insertRows)
        return result
    }

    private func insertPlan(for entity: EntityDescription) throws -> InsertPlan {
        let layout = store.insertLayout(for: entity)
        return InsertPlan(entity: entity, statement: try connection.cachedStatement(layout.sql), layout: layout)
    }

    private mutating func insert(_ pointer: UnsafePointer<RowInsert>, primaryKey: Int64, plan: InsertPlan) throws {
        let row = UnsafeRowInsert(pointer)
        let st = plan.statement
        st.bind(primaryKey, at: 1)
        st.bind(Int64(generator.storedNumber(plan.entity)), at: 2)
        st.bind(Int64(1), at: 3)
        // Values are bound straight from the object's array (no copy); foreign keys are NULL
        // unless a reference names a destination.
        for a in plan.layout.attributes { st.bind(row.values[a.slot], at: a.index) }
        if !plan.layout.foreignKeys.isEmpty {
            for fk in plan.layout.foreignKeys { st.bindNull(fk.index) }
            for r in row.references {
                guard let target = try keys.key(for: r.target, from: row.objectID, slot: r.slot),
                    let fk = plan.layout.foreignKeys.first(where: { $0.slot == r.slot })
                else { continue }
                st.bind(target, at: fk.index)
            }
        }
        do {
            try st.execute()
        } catch {
            // `error` is a SQLiteError here (typed throws).
            guard error.isUniqueConstraintViolation else { throw error }
            let id =
                row.objectID.isTemporaryID
                ? ObjectID(entity: plan.entity, storeIdentifier: store.identifier, primaryKey: primaryKey) : row.objectID
            var values = try keys.resolved(row.values, row.references, source: id)
            for fk in plan.layout.foreignKeys where !row.references.contains(where: { $0.slot == fk.slot }) { values[fk.slot] = .null }
            try recordUniquenessConflict(id: id, values: values, cached: nil, oldVersion: 0, reportAs: row.objectID)
        }
    }

    /// Runs an UPDATE; returns the new version, or nil when a conflict was recorded.
    ///
    /// The row is read through a pointer into the change set: a `RowUpdate` argument would be
    /// copied out of the array first (retaining its three arrays, and releasing them after).
    private mutating func update(_ row: UnsafePointer<RowUpdate>) throws -> Int64? {
        let u = UnsafeRowUpdate(row)
        let check = u.expectedVersion != nil
        let entityKey = ObjectIdentifier(row.pointee.objectID.entity)
        // (The slots are ascending: built in property order.)
        let st: SQLiteStatement
        if let cached = lastUpdateStatement, lastUpdateEntity == entityKey, lastUpdateCheck == check,
            Self.sameSlots(lastUpdateSlots, row)
        {
            st = cached
        } else {
            let entity = u.objectID.entity
            let slots = u.changedSlots
            let properties = slots.map { entity.properties[$0] }.filter { p in
                p.isTransient ? false : ((p as? RelationshipDescription)?.hasForeignKey ?? true)
            }
            let sql = store.sql(.update(entityKey, slots: slots, checkVersion: check)) {
                generator.update(entity, properties: properties, checkVersion: check)
            }
            st = try connection.cachedStatement(sql)
            lastUpdateEntity = entityKey
            lastUpdateCheck = check
            lastUpdateSlots = slots
            lastUpdateProperties = properties
            lastUpdateStatement = st
        }
        var index: Int32 = 1
        if row.pointee.references.isEmpty {
            // Bound from the change set's own array (read in place, no retain of it).
            for i in lastUpdateProperties.indices {
                st.bind(row.pointee.values[lastUpdateProperties[i].slot], at: index)
                index += 1
            }
        } else {
            let values = try keys.resolved(u.values, u.references, source: u.objectID)
            for i in lastUpdateProperties.indices {
                st.bind(values[lastUpdateProperties[i].slot], at: index)
                index += 1
            }
        }
        // A checked update binds the new version (see `SQLGenerator.update`).
        if let v = u.expectedVersion {
            st.bind(SQLGenerator.nextVersion(after: v), at: index)
            st.bind(u.objectID.primaryKey, at: index + 1)
            st.bind(v, at: index + 2)
        } else {
            st.bind(u.objectID.primaryKey, at: index)
        }
        do {
            try st.execute()
        } catch {
            // `error` is a SQLiteError here (typed throws).
            guard error.isUniqueConstraintViolation else { throw error }
            let values = try keys.resolved(u.values, u.references, source: u.objectID)
            try recordUniquenessConflict(id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0)
            return nil
        }
        // No RETURNING clause: SQLite buffers RETURNING rows in a temporary b-tree it opens and
        // closes for every execution, which cost more than the update itself. A checked update
        // that changed its row moved the version from the expected one to the next.
        if connection.changes == 1 {
            if let expected = u.expectedVersion { return SQLGenerator.nextVersion(after: expected) }
            return try currentVersion(of: u.objectID)
        }
        let values = try keys.resolved(u.values, u.references, source: u.objectID)
        try recordVersionConflict(id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0)
        return nil
    }

    /// Whether `slots` are the changed slots of `row`, compared in place: the row's array is
    /// not copied (a retain and a release per updated row). Rows of a save that changed the
    /// same slots share one array, which is found equal without reading it.
    @inline(__always)
    private static func sameSlots(_ slots: [Int], _ row: UnsafePointer<RowUpdate>) -> Bool {
        slots.withUnsafeBufferPointer { a in
            row.pointee.changedSlots.withUnsafeBufferPointer { b in
                a.count == b.count && (a.baseAddress == b.baseAddress || a.elementsEqual(b))
            }
        }
    }

    /// The version of a row (after an unchecked update).
    private func currentVersion(of id: ObjectID) throws -> Int64? {
        let st = try connection.cachedStatement(generator.selectVersion(id.entity))
        defer { st.reset() }
        st.bind(id.primaryKey, at: 1)
        return try st.step() ? st.int64(0) : nil
    }

    private mutating func delete(_ row: UnsafePointer<RowDelete>) throws {
        let entity = row.pointee.objectID.entity, check = row.pointee.expectedVersion != nil
        let entityKey = ObjectIdentifier(entity)
        let st: SQLiteStatement
        if let last = lastDelete, last.entity == entityKey, last.check == check {
            st = last.statement
        } else {
            st = try connection.cachedStatement(
                store.sql(.delete(entityKey, checkVersion: check)) {
                    generator.delete(entity, checkVersion: check)
                })
            lastDelete = (entityKey, check, st)
        }
        st.bind(row.pointee.objectID.primaryKey, at: 1)
        if let v = row.pointee.expectedVersion { st.bind(v, at: 2) }
        try st.execute()
        if connection.changes == 0 {
            let d = row.pointee
            try recordVersionConflict(id: d.objectID, values: d.values, cached: d.values, oldVersion: d.expectedVersion ?? 0)
        }
    }

    private mutating func join(_ j: JoinChange, insert: Bool) throws {
        guard let sql = insert ? generator.insertJoin(j.relationship) : generator.deleteJoin(j.relationship) else {
            throw CoherenceError(.invalidRequest, "Relationship '\(j.relationship.name)' has no join table.", property: j.relationship.name)
        }
        let slot = j.relationship.slot
        guard let source = try keys.key(for: j.source, from: j.source, slot: slot),
            let destination = try keys.key(for: j.destination, from: j.source, slot: slot)
        else { return }
        let st = try connection.cachedStatement(sql)
        st.bind(source, at: 1)
        st.bind(destination, at: 2)
        try st.execute()
    }

    /// Writes the places of an ordered relationship's destinations (see ``OrderChange``).
    private mutating func order(_ o: OrderChange) throws {
        let r = o.relationship
        guard let sql = o.appends ? generator.appendOrder(r) : generator.writeOrder(r) else {
            throw CoherenceError(.invalidRequest, "Relationship '\(r.name)' keeps no order column.", property: r.name)
        }
        guard let source = try keys.key(for: o.source, from: o.source, slot: r.slot) else { return }
        let st = try connection.cachedStatement(sql)
        for (n, d) in o.destinations.enumerated() {
            guard let destination = try keys.key(for: d, from: o.source, slot: r.slot) else { continue }
            if o.appends {
                st.bind(source, at: 1)
                st.bind(destination, at: 2)
            } else {
                st.bind(Int64(n), at: 1)
                st.bind(destination, at: 2)
            }
            st.bind(source, at: 3)
            try st.execute()
        }
    }

    // MARK: Conflicts

    /// The current version and values of a row, or nil when it does not exist.
    private static func current(_ id: ObjectID, store: SQLiteStore, connection: SQLiteConnection) throws -> StoreRow? {
        let plan = store.plan(for: id.entity.rootEntity)
        let st = try connection.cachedStatement(store.generator.selectOne(id.entity, plan: plan))
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
        let row = try Self.current(id, store: store, connection: connection)
        conflicts.append(SaveKeys.versionConflict(id: id, values: values, cached: cached, oldVersion: oldVersion, row: row))
    }

    /// `reportAs`: the ID the conflict names (an insert's temporary ID, as the caller knows it).
    private mutating func recordUniquenessConflict(
        id: ObjectID, values: [StoredValue], cached: [StoredValue]?, oldVersion: Int64,
        reportAs: ObjectID? = nil
    ) throws {
        let store = self.store, connection = self.connection
        conflicts += try keys.uniquenessConflicts(
            id: id, values: values, cached: cached, oldVersion: oldVersion, reportAs: reportAs,
            matches: { e, properties in
                let st = try connection.cachedStatement(
                    store.generator.selectUniquenessMatches(id.entity, constraint: properties, declaringEntity: e))
                defer { st.reset() }
                for (i, p) in properties.enumerated() { st.bind(values[p.slot], at: Int32(i + 1)) }
                var rows: [(primaryKey: Int64, entityNumber: Int)] = []
                while try st.step() { rows.append((st.int64(0), Int(st.int64(1)))) }
                return rows
            }, current: { try Self.current($0, store: store, connection: connection) })
    }
}

/// How rows of one entity bind to its INSERT: the SQL and each stored property's parameter.
final class InsertLayout: Sendable {
    let sql: String
    /// (value slot, parameter index) of each stored attribute.
    let attributes: [(slot: Int, index: Int32)]
    /// (relationship slot, parameter index) of each foreign-key column.
    let foreignKeys: [(slot: Int, index: Int32)]

    init(entity: EntityDescription, sql: String) {
        self.sql = sql
        var attributes: [(slot: Int, index: Int32)] = []
        var foreignKeys: [(slot: Int, index: Int32)] = []
        var index: Int32 = 4
        for p in entity.storedProperties {
            if p is RelationshipDescription { foreignKeys.append((p.slot, index)) } else { attributes.append((p.slot, index)) }
            index += 1
        }
        self.attributes = attributes
        self.foreignKeys = foreignKeys
    }
}

/// Field access to a row of a change set through a pointer, without copying the row.
// Invariant: made and used only inside the change set's `withUnsafeBufferPointer`; never kept.
private struct UnsafeRowUpdate {
    let row: UnsafePointer<RowUpdate>
    init(_ row: UnsafePointer<RowUpdate>) { self.row = row }
    var objectID: ObjectID { row.pointee.objectID }
    var values: [StoredValue] { row.pointee.values }
    var changedSlots: [Int] { row.pointee.changedSlots }
    var references: [RowReference] { row.pointee.references }
    var expectedVersion: Int64? { row.pointee.expectedVersion }
    var cachedValues: [StoredValue]? { row.pointee.cachedValues }
}

/// Field access to an insert of a change set through a pointer, without copying the row.
// Invariant: made and used only inside the change set's `withUnsafeBufferPointer`; never kept.
private struct UnsafeRowInsert {
    let row: UnsafePointer<RowInsert>
    init(_ row: UnsafePointer<RowInsert>) { self.row = row }
    var objectID: ObjectID { row.pointee.objectID }
    var values: [StoredValue] { row.pointee.values }
    var references: [RowReference] { row.pointee.references }
}
