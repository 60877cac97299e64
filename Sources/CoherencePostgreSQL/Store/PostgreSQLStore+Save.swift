import Foundation

extension PostgreSQLStore {
    /// Writes a change set inside a new transaction and leaves it open for ``commitSave()``; on
    /// any conflict or error the transaction is rolled back and nothing is written.
    ///
    /// Order: allocate keys for new objects, deletes, updates, inserts, join-table changes, as
    /// in the SQLite store. An insert that a unique index refuses inserts nothing
    /// (`ON CONFLICT DO NOTHING`), and an update of a hierarchy with uniqueness constraints runs
    /// inside a savepoint, so that a uniqueness conflict is reported as data and the
    /// transaction can go on to find the others. A table with a deferrable unique constraint
    /// (another program's) is inserted into without `ON CONFLICT`, which PostgreSQL refuses
    /// there (see `PostgreSQLStore+DeferrableIndexes.swift`); a save that meets such a constraint
    /// added while the store is open runs once more.
    package func beginSave(_ changes: StoreChangeSet) throws(CoherenceError) -> StoreSaveResult {
        do {
            return try writeSave(changes)
        } catch {
            guard learnDeferrableTables(after: error) else { throw error }
            return try writeSave(changes)
        }
    }

    /// One attempt of ``beginSave(_:)``.
    private func writeSave(_ changes: StoreChangeSet) throws(CoherenceError) -> StoreSaveResult {
        // The usual inserts (new objects of one root entity) get their keys in the round trip of
        // the `BEGIN`.
        let reservation = SaveKeys.singleReservation(for: changes.inserts)
        let (c, firstKey) = try beginWriterTransaction("Starting the save transaction failed", reserving: reservation)
        do {
            // With history, the tombstones of deleted objects are read before their rows go.
            var history = try tracksHistory ? SaveHistory(changes) { ids in try storedValues(of: ids, on: c) } : nil
            var writer = PostgreSQLSaveWriter(store: self, connection: c)
            if let reservation, let firstKey { writer.reserved = (reservation.root, reservation.count, firstKey) }
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

    /// Runs the checks of the constraints and constraint triggers that are deferred to COMMIT
    /// (`DEFERRABLE INITIALLY DEFERRED`: none of Coherence's own, but another program may add
    /// them to the store's tables) now, inside the open transaction: `SET CONSTRAINTS ALL
    /// IMMEDIATE` checks what is pending and raises the violation while the transaction can
    /// still roll back. The coordinator calls it before the first store of a save commits, for
    /// the stores that commit after another one (see `PersistentStoreCoordinator.commit`).
    /// - Throws: `.storeWriteFailed` with the `PostgreSQLError` (its SQLSTATE, `23503` for a
    ///   foreign key, say) in `underlyingErrors`, as a failed COMMIT would; the transaction is
    ///   rolled back.
    package func prepareCommit() throws(CoherenceError) {
        let c = try writerConnection()
        // (A connection replaced since the save began has no transaction to check or commit.)
        guard c.isInTransaction else {
            rollbackSave()
            throw CoherenceError(
                .connectionLost, "The connection to the server was lost before the save committed (nothing was written).",
                store: locationDescription)
        }
        do {
            try c.execute("SET CONSTRAINTS ALL IMMEDIATE")
        } catch {
            rollbackSave()
            throw storeError(.storeWriteFailed, error, "Committing the save failed (checked before any store of the save committed)")
        }
    }

    /// Commits the open save. When the connection is lost on the way, the server is asked on a
    /// new connection whether the transaction committed (the connection can be lost after the
    /// server committed, before its answer arrived: a server waiting for a synchronous standby,
    /// a network failure): committed, the save succeeded; otherwise it fails with
    /// `.connectionLost`.
    package func commitSave() throws(CoherenceError) {
        let c = try writerConnection()
        do {
            try commit(on: c, token: pendingHistoryToken)
        } catch {
            if error.isConnectionLoss, committedDespiteLostConnection() {
                historyCommits.withLock { $0.committed() }
                return
            }
            rollbackSave()
            throw storeError(.storeWriteFailed, error, "Committing the save failed")
        }
        historyCommits.withLock { $0.committed() }
    }

    /// Whether the writer's transaction, whose connection was lost, committed: asked on a new
    /// writer connection (`txid_status`). False when that cannot be told (no new connection,
    /// the transaction still in progress on the server, or aborted).
    private func committedDespiteLostConnection() -> Bool {
        guard let id = writerTransactionID.withLock({ $0 }), let c = try? reconnectWriter() else { return false }
        guard let status = try? c.execute("SELECT txid_status($1)", [.integer(id)]).rows.first?.first else { return false }
        return status == .text("committed")
    }

    package func rollbackSave() {
        historyCommits.withLock { $0.rolledBack() }
        guard let c = try? writerConnection(), c.isInTransaction else { return }
        _ = try? c.execute("ROLLBACK")
    }
}

/// The work of one save on one PostgreSQL store.
///
/// Its INSERT, UPDATE and DELETE statements are sent in pipelines of up to
/// ``pipelineLength`` (one round trip each, see `PostgreSQLConnection.executePipelined`); each
/// result is looked at once its pipeline has run, in the statements' order. An update that needs
/// a savepoint (it changes a column of a uniqueness constraint) runs on its own, after the
/// statements queued before it.
struct PostgreSQLSaveWriter {
    let store: PostgreSQLStore
    let connection: PostgreSQLConnection
    var generator: SQLGenerator { store.generator }
    var conflicts: [SaveConflict] = []
    var keys: SaveKeys
    /// Keys reserved with the transaction's `BEGIN` (root entity, count, first key), used by the
    /// reservation of the same root and count instead of another round trip.
    var reserved: (root: EntityDescription, count: Int, first: Int64)?
    /// The new versions of the change set's updates, by position (0 for a conflict).
    var updatedVersions: [Int64] = []
    /// Statements sent but not yet run, and what each result means.
    private var queued: [(sql: String, parameters: [StoredValue])] = []
    private var pending: [Pending] = []
    /// The SQL of the last insert, update and delete, and what it was made for: a save's rows of
    /// one entity and set of changed columns reuse it without making and looking it up again.
    private var lastInsert: (entity: ObjectIdentifier, sql: String, plain: Bool)?
    private var lastUpdate: (entity: ObjectIdentifier, slots: [Int], checkVersion: Bool, sql: String)?
    private var lastDelete: (entity: ObjectIdentifier, checkVersion: Bool, sql: String)?

    /// How many statements a pipeline carries at most: enough to make round trips rare, few
    /// enough that the server's replies fit in the socket's buffer while the rest are sent.
    static let pipelineLength = 256

    /// What a queued statement's result tells.
    private enum Pending {
        /// An insert (no row: a uniqueness constraint refused it).
        case insert(id: ObjectID, values: [StoredValue], reportAs: ObjectID)
        /// The update at `index` of the change set (no version back: a version conflict).
        case update(index: Int, id: ObjectID, values: [StoredValue], cached: [StoredValue]?, oldVersion: Int64)
        /// A delete (no row: a version conflict).
        case delete(RowDelete)
        /// A join-table change (nothing to check).
        case join
    }

    init(store: PostgreSQLStore, connection: PostgreSQLConnection) {
        self.store = store
        self.connection = connection
        self.keys = SaveKeys(storeIdentifier: store.identifier, location: store.locationDescription)
    }

    mutating func write(_ changes: StoreChangeSet) throws -> StoreSaveResult {
        var result = StoreSaveResult()
        let store = self.store
        let reserved = self.reserved
        try keys.allocate(for: changes.inserts) { root, count throws(CoherenceError) in
            if let reserved, reserved.root === root, reserved.count == count { return reserved.first }
            return try store.allocateKeys(for: root, count: count)
        }
        for d in changes.deletes { try delete(d) }
        updatedVersions = [Int64](repeating: 0, count: changes.updates.count)
        for (n, u) in changes.updates.enumerated() { try update(u, at: n) }
        for (n, i) in changes.inserts.enumerated() { try insert(i, primaryKey: keys.insertKeys[n]) }
        if !changes.joinInserts.isEmpty && !changes.updates.isEmpty {
            // The updates' version checks first: a destination whose row is gone is a conflict,
            // not a foreign-key failure of its join rows (one more round trip, for such saves only).
            try flush()
            if !conflicts.isEmpty {
                result.updatedVersions = updatedVersions
                return result
            }
        }
        for j in changes.joinDeletes { try join(j, insert: false) }
        for j in changes.joinInserts { try join(j, insert: true) }
        for o in changes.orders { try order(o) }
        try flush()
        result.updatedVersions = updatedVersions
        result.insertedIDs = keys.insertedIDs(changes.inserts)
        return result
    }

    /// Queues a statement; runs the queue when it is full.
    private mutating func enqueue(_ sql: String, _ parameters: [StoredValue], _ meaning: Pending) throws {
        queued.append((sql, parameters))
        pending.append(meaning)
        if queued.count >= Self.pipelineLength { try flush() }
    }

    /// Runs the queued statements in one pipeline and looks at their results.
    private mutating func flush() throws {
        guard !queued.isEmpty else { return }
        let results = try connection.executePipelined(queued)
        let meanings = pending
        queued.removeAll(keepingCapacity: true)
        pending.removeAll(keepingCapacity: true)
        for (meaning, result) in zip(meanings, results) {
            switch meaning {
            case .insert(let id, let values, let reportAs):
                if result.affectedRows == 0 {
                    try recordUniquenessConflict(id: id, values: values, cached: nil, oldVersion: 0, reportAs: reportAs)
                }
            case .update(let index, let id, let values, let cached, let oldVersion):
                if let version = result.firstInteger {
                    updatedVersions[index] = version
                } else {
                    try recordVersionConflict(id: id, values: values, cached: cached, oldVersion: oldVersion)
                }
            case .delete(let d):
                if result.affectedRows == 0 {
                    try recordVersionConflict(id: d.objectID, values: d.values, cached: d.values, oldVersion: d.expectedVersion ?? 0)
                }
            case .join:
                break
            }
        }
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
        let sql: String
        let plain: Bool
        if let last = lastInsert, last.entity == ObjectIdentifier(entity) {
            (sql, plain) = (last.sql, last.plain)
        } else {
            plain = store.insertsWithoutArbiter(entity)
            sql = store.numbered(generator.insert(entity, onConflict: !plain))
            lastInsert = (ObjectIdentifier(entity), sql, plain)
        }
        // Without `ON CONFLICT` (a deferrable constraint of another program on the table), a
        // row the model's uniqueness constraints may refuse is inserted inside a savepoint.
        guard plain, Self.changesConstrainedColumn(entity, entity.storedProperties) else {
            try enqueue(sql, parameters, .insert(id: id, values: values, reportAs: row.objectID))
            return
        }
        try flush()
        if try store.executeRefusable(sql, parameters, on: connection, savepoint: true) == nil {
            try recordUniquenessConflict(id: id, values: values, cached: nil, oldVersion: 0, reportAs: row.objectID)
        }
    }

    /// Queues an UPDATE (or runs it inside a savepoint, when it may break a uniqueness
    /// constraint); its new version goes to `updatedVersions[index]`, or a conflict is recorded.
    private mutating func update(_ u: RowUpdate, at index: Int) throws {
        let entity = u.objectID.entity
        let properties = u.changedSlots.map { entity.properties[$0] }.filter { p in
            p.isTransient ? false : ((p as? RelationshipDescription)?.hasForeignKey ?? true)
        }
        let values = try keys.resolved(u.values, u.references, source: u.objectID)
        var parameters = properties.map { Self.columnValue(values[$0.slot], $0) }
        parameters.append(.integer(u.objectID.primaryKey))
        if let v = u.expectedVersion { parameters.append(.integer(v)) }
        let sql: String
        let checkVersion = u.expectedVersion != nil
        if let last = lastUpdate, last.entity == ObjectIdentifier(entity), last.checkVersion == checkVersion, last.slots == u.changedSlots {
            sql = last.sql
        } else {
            sql = store.numbered(generator.update(entity, properties: properties, checkVersion: checkVersion))
            lastUpdate = (ObjectIdentifier(entity), u.changedSlots, checkVersion, sql)
        }
        // Only an update that changes a column of a uniqueness constraint can break one: the
        // others need no savepoint, and go in the pipeline.
        guard Self.changesConstrainedColumn(entity, properties) else {
            try enqueue(
                sql, parameters,
                .update(index: index, id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0))
            return
        }
        try flush()
        guard let result = try store.executeRefusable(sql, parameters, on: connection, savepoint: true) else {
            try recordUniquenessConflict(id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0)
            return
        }
        if let version = result.firstInteger {
            updatedVersions[index] = version
        } else {
            try recordVersionConflict(id: u.objectID, values: values, cached: u.cachedValues, oldVersion: u.expectedVersion ?? 0)
        }
    }

    /// Whether `properties` include one that a uniqueness constraint of `entity` or of an
    /// ancestor names (the unique indexes that apply to its rows).
    static func changesConstrainedColumn(_ entity: EntityDescription, _ properties: [PropertyDescription]) -> Bool {
        var e: EntityDescription? = entity
        while let current = e {
            for constraint in current.uniquenessConstraints where properties.contains(where: { constraint.contains($0.name) }) {
                return true
            }
            e = current.superentity
        }
        return false
    }

    private mutating func delete(_ d: RowDelete) throws {
        var parameters: [StoredValue] = [.integer(d.objectID.primaryKey)]
        if let v = d.expectedVersion { parameters.append(.integer(v)) }
        let entity = d.objectID.entity, checkVersion = d.expectedVersion != nil
        let sql: String
        if let last = lastDelete, last.entity == ObjectIdentifier(entity), last.checkVersion == checkVersion {
            sql = last.sql
        } else {
            sql = store.numbered(generator.delete(entity, checkVersion: checkVersion))
            lastDelete = (ObjectIdentifier(entity), checkVersion, sql)
        }
        try enqueue(sql, parameters, .delete(d))
    }

    private mutating func join(_ j: JoinChange, insert: Bool) throws {
        // A join table with another program's deferrable key takes no `ON CONFLICT`.
        let plain = insert && store.insertsJoinWithoutArbiter(j.relationship)
        let generated =
            insert
            ? (plain ? generator.insertJoinIfAbsent(j.relationship) : generator.insertJoin(j.relationship))
            : generator.deleteJoin(j.relationship)
        guard let sql = generated else {
            throw CoherenceError(.invalidRequest, "Relationship '\(j.relationship.name)' has no join table.", property: j.relationship.name)
        }
        let slot = j.relationship.slot
        guard let source = try keys.key(for: j.source, from: j.source, slot: slot),
            let destination = try keys.key(for: j.destination, from: j.source, slot: slot)
        else { return }
        let pair: [StoredValue] = [.integer(source), .integer(destination)]
        try enqueue(store.numbered(sql), plain ? pair + pair : pair, .join)
    }

    /// Writes the places of an ordered relationship's destinations (see ``OrderChange``).
    private mutating func order(_ o: OrderChange) throws {
        let r = o.relationship
        guard let sql = o.appends ? generator.appendOrder(r) : generator.writeOrder(r) else {
            throw CoherenceError(.invalidRequest, "Relationship '\(r.name)' keeps no order column.", property: r.name)
        }
        guard let source = try keys.key(for: o.source, from: o.source, slot: r.slot) else { return }
        let numbered = store.numbered(sql)
        for (n, d) in o.destinations.enumerated() {
            guard let destination = try keys.key(for: d, from: o.source, slot: r.slot) else { continue }
            let first: StoredValue = o.appends ? .integer(source) : .integer(Int64(n))
            try enqueue(numbered, [first, .integer(destination), .integer(source)], .join)
        }
    }

    // MARK: Conflicts

    /// The current version and values of a row, or nil when it does not exist.
    private static func current(_ id: ObjectID, store: PostgreSQLStore, connection: PostgreSQLConnection) throws -> StoreRow? {
        let plan = store.plan(for: id.entity.rootEntity)
        return try connection.query(store.numbered(store.generator.selectOne(id.entity, plan: plan)), [.integer(id.primaryKey)]) {
            result in try store.rows(result, plan: plan).first
        }
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
