import Foundation

extension SQLiteStore {
    /// Runs a batch request inside a new write transaction and leaves the transaction open for
    /// ``commitSave()``; on any error the transaction is rolled back and nothing is written.
    package func beginBatch(
        _ request: StoreBatchRequest, author: String?, contextName: String?
    ) throws(CoherenceError) -> StoreBatchResult {
        let c = try writerConnectionForSave()
        do {
            try c.cachedStatement("BEGIN IMMEDIATE").execute()
        } catch {
            throw storeError(.storeWriteFailed, error, "Starting the batch transaction failed")
        }
        var executor = BatchExecutor(writer: SQLiteBatchWriter(store: self, connection: c))
        do {
            try refuseWritesToAChangedStore(c)
            let result = try executor.run(request, author: author, contextName: contextName)
            try keepCoreDataColumns(c)
            try c.checkDeferredForeignKeys()
            return result
        } catch {
            rollbackSave()
            throw storeError(.storeWriteFailed, error, "The batch request failed")
        }
    }
}

/// A batch request's row operations on a SQLite store's writer connection, inside its open
/// transaction. Every statement comes from the store's `SQLGenerator` and is cached on the
/// connection.
struct SQLiteBatchWriter: BatchWriter {
    let store: SQLiteStore
    let connection: SQLiteConnection
    /// The INSERT of the last entity inserted (consecutive rows share it), with the slot of each
    /// attribute it binds after the key.
    private var lastInsert: (entity: EntityDescription, statement: SQLiteStatement, slots: [Int])?

    init(store: SQLiteStore, connection: SQLiteConnection) {
        self.store = store
        self.connection = connection
    }

    var storeIdentifier: UUID { store.identifier }
    var storeLocation: String { store.path }

    /// With persistent history on, every request records one history transaction.
    var recordsChanges: Bool { store.tracksHistory }

    /// Records the request's history transaction in the request's open transaction (it commits
    /// or rolls back with it).
    mutating func record(_ transaction: HistoryTransactionRecord) throws(CoherenceError) {
        try store.recordHistory(transaction)
    }

    mutating func storedValues(of ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: [StoredValue]] {
        do {
            return try store.storedValues(of: ids, on: connection)
        } catch {
            throw store.storeError(.storeWriteFailed, error, "Reading the tombstones of deleted rows failed")
        }
    }
    private var generator: SQLGenerator { store.generator }

    /// A cached statement of the writer connection.
    private func statement(_ sql: String) throws(CoherenceError) -> SQLiteStatement {
        do {
            return try connection.cachedStatement(sql)
        } catch {
            throw store.storeError(.storeWriteFailed, error, "Preparing a batch statement failed")
        }
    }

    /// Runs a statement with a key list bound last, as `what` for errors; false when a
    /// uniqueness constraint refused it.
    private func execute(_ st: SQLiteStatement, _ what: @autoclosure () -> String) throws(CoherenceError) -> Bool {
        do {
            try st.execute()
            return true
        } catch {
            if error.isUniqueConstraintViolation { return false }
            throw store.storeError(.storeWriteFailed, error, what())
        }
    }

    /// Runs a query, handing each row to `body`.
    private func query(_ st: SQLiteStatement, _ body: (SQLiteStatement) -> Void) throws(CoherenceError) {
        defer { st.reset() }
        do {
            while try st.step() { body(st) }
        } catch {
            throw store.storeError(.storeWriteFailed, error, "Reading rows in a batch request failed")
        }
    }

    /// Rows of a query of related keys (source key, destination key, destination entity).
    private func relatedKeys(_ sql: String?, _ keys: [Int64], _ name: String) throws(CoherenceError) -> RelatedKeys {
        guard !keys.isEmpty else { return [:] }
        guard let sql else {
            throw CoherenceError(.invalidRequest, "Relationship '\(name)' is not stored.", property: name, store: storeLocation)
        }
        let st = try statement(sql)
        st.bind(generator.keyList(keys), at: 1)
        var result: RelatedKeys = [:]
        try query(st) { st in result[st.int64(0), default: []].append((st.int64(1), Int(st.int64(2)))) }
        return result
    }

    mutating func allocateKeys(for root: EntityDescription, count: Int) throws(CoherenceError) -> Int64 {
        try store.allocateKeys(for: root, count: count)
    }

    mutating func insertRow(_ entity: EntityDescription, key: Int64, values: [StoredValue]) throws(CoherenceError) -> Bool {
        let st: SQLiteStatement
        let slots: [Int]
        if let last = lastInsert, last.entity === entity {
            st = last.statement
            slots = last.slots
        } else {
            let attributes = entity.storedProperties.compactMap { $0 as? AttributeDescription }
            st = try statement(generator.batchInsert(entity, attributes: attributes))
            slots = attributes.map(\.slot)
            lastInsert = (entity, st, slots)
        }
        st.bind(key, at: 1)
        var index: Int32 = 2
        for slot in slots {
            st.bind(values[slot], at: index)
            index += 1
        }
        return try execute(st, "Inserting a row of '\(entity.name)' failed")
    }

    mutating func uniquenessMatches(_ entity: EntityDescription, values: [StoredValue]) throws(CoherenceError) -> [(
        constraint: [String], rows: [ObjectID]
    )] {
        try uniquenessMatches(entity, values: values) { (e, properties) throws(CoherenceError) -> [(Int64, Int)] in
            let st = try statement(generator.selectUniquenessMatches(entity, constraint: properties, declaringEntity: e))
            for (i, p) in properties.enumerated() { st.bind(values[p.slot], at: Int32(i + 1)) }
            var keys: [(Int64, Int)] = []
            try query(st) { st in keys.append((st.int64(0), Int(st.int64(1)))) }
            return keys
        }
    }

    mutating func row(_ id: ObjectID) throws(CoherenceError) -> StoreRow? {
        let plan = store.plan(for: id.entity.rootEntity)
        let st = try statement(generator.selectOne(id.entity, plan: plan))
        st.bind(id.primaryKey, at: 1)
        var row: StoreRow?
        try query(st) { st in
            let number = Int(st.int64(1))
            guard let entity = plan.entities[number], let mapping = plan.mapping[number] else { return }
            var values = entity.initialValues
            for (column, slot) in mapping { values[slot] = st.value(column) }
            row = StoreRow(entity: entity, primaryKey: id.primaryKey, version: st.int64(2), values: values)
        }
        return row
    }

    mutating func updateRows(
        _ entity: EntityDescription, keys: [Int64], properties: [PropertyDescription],
        values: [StoredValue]
    ) throws(CoherenceError) -> Bool {
        guard !keys.isEmpty else { return true }
        let st = try statement(generator.updateRows(entity, properties: properties))
        var index: Int32 = 1
        for v in values {
            st.bind(v, at: index)
            index += 1
        }
        st.bind(generator.keyList(keys), at: index)
        return try execute(st, "Updating rows of '\(entity.name)' failed")
    }

    mutating func keys(matching fetch: StoreFetch, foreignKeys: [RelationshipDescription]) throws(CoherenceError) -> (
        keys: [(primaryKey: Int64, entityNumber: Int)], foreignKeys: [[Int64: Int64]]
    ) {
        let (sql, bindings) = try generator.selectKeys(fetch, foreignKeys: foreignKeys, storeIdentifier: storeIdentifier)
        let st = try statement(sql)
        st.bind(bindings)
        var keys: [(primaryKey: Int64, entityNumber: Int)] = []
        var values = [[Int64: Int64]](repeating: [:], count: foreignKeys.count)
        try query(st) { st in
            let key = st.int64(0)
            keys.append((key, Int(st.int64(1))))
            for n in values.indices where !st.isNull(Int32(2 + n)) { values[n][key] = st.int64(Int32(2 + n)) }
        }
        return (keys, values)
    }

    mutating func existingKeys(of entity: EntityDescription, among keys: [Int64]) throws(CoherenceError) -> [(
        primaryKey: Int64, entityNumber: Int
    )] {
        guard !keys.isEmpty else { return [] }
        let st = try statement(generator.selectKeys(entity))
        st.bind(generator.keyList(keys), at: 1)
        var found: [(primaryKey: Int64, entityNumber: Int)] = []
        try query(st) { st in found.append((st.int64(0), Int(st.int64(1)))) }
        return found
    }

    mutating func related(_ relationship: RelationshipDescription, sources: [Int64]) throws(CoherenceError) -> RelatedKeys {
        try relatedKeys(generator.selectRelated(relationship), sources, relationship.name)
    }

    mutating func deleteJoinRows(_ relationship: RelationshipDescription, keys: [Int64], destinations: Bool) throws(CoherenceError) {
        guard !keys.isEmpty, let sql = generator.deleteJoinRows(relationship, destinations: destinations) else { return }
        let st = try statement(sql)
        st.bind(generator.keyList(keys), at: 1)
        _ = try execute(st, "Removing join rows of '\(relationship.name)' failed")
    }

    mutating func deleteRows(_ root: EntityDescription, keys: [Int64]) throws(CoherenceError) {
        guard !keys.isEmpty else { return }
        let st = try statement(generator.deleteRows(root))
        st.bind(generator.keyList(keys), at: 1)
        _ = try execute(st, "Deleting rows of '\(root.name)' failed")
    }

    mutating func deleteRows(matching fetch: StoreFetch) throws(CoherenceError) {
        let (sql, bindings) = try generator.deleteRows(fetch, storeIdentifier: storeIdentifier)
        let st = try statement(sql)
        st.bind(bindings)
        _ = try execute(st, "Deleting rows of '\(fetch.entity.name)' failed")
    }
}
