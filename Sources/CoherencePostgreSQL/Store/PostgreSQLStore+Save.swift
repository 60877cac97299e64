import Foundation

extension PostgreSQLStore {
    /// Writes a change set inside a new transaction and leaves it open for ``commitSave()``; on
    /// any conflict or error the transaction is rolled back and nothing is written.
    ///
    /// Order: allocate keys for new objects, deletes, updates, inserts, join-table changes, as
    /// in the SQLite store. An insert that a unique index refuses inserts nothing
    /// (`ON CONFLICT DO NOTHING`), and an update of a hierarchy with uniqueness constraints runs
    /// inside a savepoint, so that a uniqueness conflict is reported as data and the
    /// transaction can go on to find the others.
    package func beginSave(_ changes: StoreChangeSet) throws(CoherenceError) -> StoreSaveResult {
        let c = try beginWriterTransaction("Starting the save transaction failed")
        do {
            // With history, the tombstones of deleted objects are read before their rows go.
            var history = try tracksHistory ? SaveHistory(changes) { ids in try storedValues(of: ids, on: c) } : nil
            var writer = PostgreSQLSaveWriter(store: self, connection: c)
            let result = try writer.write(changes)
            if !writer.conflicts.isEmpty {
                rollbackSave()
                var error = CoherenceError(.conflict, "The save has \(writer.conflicts.count) conflict(s).", store: locationDescription)
                error.conflicts = writer.conflicts
                throw error
            }
            if let record = history?.record(for: changes, result: result) { try recordHistory(record, on: c) }
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
            // The notification carries the commit's history token (nil without history).
            try notifyCommit(on: c, token: pendingHistoryToken)
            try c.execute("COMMIT")
        } catch {
            rollbackSave()
            throw storeError(.storeWriteFailed, error, "Committing the save failed")
        }
        historyCommits.withLock { $0.committed() }
    }

    package func rollbackSave() {
        historyCommits.withLock { $0.rolledBack() }
        guard let c = try? writerConnection(), c.isInTransaction else { return }
        _ = try? c.execute("ROLLBACK")
    }
}

/// The work of one save on one PostgreSQL store.
struct PostgreSQLSaveWriter {
    let store: PostgreSQLStore
    let connection: PostgreSQLConnection
    var generator: SQLGenerator { store.generator }
    var conflicts: [SaveConflict] = []
    var keys: SaveKeys

    init(store: PostgreSQLStore, connection: PostgreSQLConnection) {
        self.store = store
        self.connection = connection
        self.keys = SaveKeys(storeIdentifier: store.identifier, location: store.locationDescription)
    }

    mutating func write(_ changes: StoreChangeSet) throws -> StoreSaveResult {
        var result = StoreSaveResult()
        let store = self.store
        try keys.allocate(for: changes.inserts) { root, count throws(CoherenceError) in try store.allocateKeys(for: root, count: count) }
        for d in changes.deletes { try delete(d) }
        result.updatedVersions = []
        result.updatedVersions.reserveCapacity(changes.updates.count)
        for u in changes.updates { result.updatedVersions.append(try update(u) ?? 0) }
        for (n, i) in changes.inserts.enumerated() { try insert(i, primaryKey: keys.insertKeys[n]) }
        for j in changes.joinDeletes { try join(j, insert: false) }
        for j in changes.joinInserts { try join(j, insert: true) }
        result.insertedIDs = keys.insertedIDs(changes.inserts)
        return result
    }

    /// A stored value as a column of `property` keeps it: floating-point NaN and −0.0, which
    /// `StoredValue` keeps as 8-byte blobs, are numbers in a `DOUBLE PRECISION` column.
    static func columnValue(_ value: StoredValue, _ property: PropertyDescription) -> StoredValue {
        if case .blob = value, let a = property as? AttributeDescription, a.type.isFloatingPoint, let d = value.doubleValue {
            return .real(d)
        }
        return value
    }

    private mutating func insert(_ row: RowInsert, primaryKey: Int64) throws {
        let entity = row.objectID.entity
        let id =
            row.objectID.isTemporaryID ? ObjectID(entity: entity, storeIdentifier: store.identifier, primaryKey: primaryKey) : row.objectID
        var values = try keys.resolved(row.values, row.references, source: id)
        for p in entity.storedProperties where p is RelationshipDescription && !row.references.contains(where: { $0.slot == p.slot }) {
            values[p.slot] = .null
        }
        var parameters: [StoredValue] = [.integer(primaryKey), .integer(Int64(entity.entityNumber)), .integer(1)]
        for p in entity.storedProperties { parameters.append(Self.columnValue(values[p.slot], p)) }
        let changed = try connection.execute(store.numbered(generator.insert(entity)), parameters).affectedRows
        if changed == 0 {
            try recordUniquenessConflict(id: id, values: values, cached: nil, oldVersion: 0, reportAs: row.objectID)
        }
    }

    /// Runs an UPDATE; returns the new version, or nil when a conflict was recorded.
    private mutating func update(_ u: RowUpdate) throws -> Int64? {
        let entity = u.objectID.entity
        let properties = u.changedSlots.map { entity.properties[$0] }.filter { p in
            p.isTransient ? false : ((p as? RelationshipDescription)?.hasForeignKey ?? true)
        }
        let values = try keys.resolved(u.values, u.references, source: u.objectID)
        var parameters = properties.map { Self.columnValue(values[$0.slot], $0) }
        parameters.append(.integer(u.objectID.primaryKey))
        if let v = u.expectedVersion { parameters.append(.integer(v)) }
        let sql = store.numbered(generator.update(entity, properties: properties, checkVersion: u.expectedVersion != nil))
        let constrained = Self.hasUniquenessConstraints(entity)
        guard let result = try store.executeRefusable(sql, parameters, on: connection, savepoint: constrained) else {
            try recordUniquenessConflict(id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0)
            return nil
        }
        if let version = result.firstInteger { return version }
        try recordVersionConflict(id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0)
        return nil
    }

    static func hasUniquenessConstraints(_ entity: EntityDescription) -> Bool {
        var e: EntityDescription? = entity
        while let current = e {
            if !current.uniquenessConstraints.isEmpty { return true }
            e = current.superentity
        }
        return false
    }

    private mutating func delete(_ d: RowDelete) throws {
        var parameters: [StoredValue] = [.integer(d.objectID.primaryKey)]
        if let v = d.expectedVersion { parameters.append(.integer(v)) }
        let sql = store.numbered(generator.delete(d.objectID.entity, checkVersion: d.expectedVersion != nil))
        if try connection.execute(sql, parameters).affectedRows == 0 {
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
        try connection.execute(store.numbered(sql), [.integer(source), .integer(destination)])
    }

    // MARK: Conflicts

    /// The current version and values of a row, or nil when it does not exist.
    private static func current(_ id: ObjectID, store: PostgreSQLStore, connection: PostgreSQLConnection) throws -> StoreRow? {
        let plan = store.plan(for: id.entity.rootEntity)
        let result = try connection.execute(store.numbered(store.generator.selectOne(id.entity, plan: plan)), [.integer(id.primaryKey)])
        guard let first = result.rows.first else { return nil }
        return try store.row(first, plan: plan)
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
                let sql = store.numbered(store.generator.selectUniquenessMatches(id.entity, constraint: properties, declaringEntity: e))
                return try connection.execute(sql, properties.map { Self.columnValue(values[$0.slot], $0) }).rows.compactMap { r in
                    guard r.count >= 2, case .integer(let pk) = r[0], case .integer(let number) = r[1] else { return nil }
                    return (pk, Int(number))
                }
            }, current: { try Self.current($0, store: store, connection: connection) })
    }
}
