import Foundation

extension PostgreSQLStore {
    /// Runs a batch request inside a new transaction on the writer connection and leaves it open
    /// for ``commitSave()`` (with persistent history, its history transaction is written in it);
    /// on any error the transaction is rolled back and nothing is written.
    package func beginBatch(
        _ request: StoreBatchRequest, author: String?, contextName: String?
    ) throws(CoherenceError) -> StoreBatchResult {
        let c = try beginWriterTransaction("Starting the batch transaction failed")
        if case .insert = request {
            // The tables with a deferrable unique constraint (inserted into without `ON
            // CONFLICT`) as they are now: a constraint added while the store is open cannot be
            // met by running the request again, whose rows may come from a handler (one round
            // trip more per batch insert).
            do {
                let found = try Self.deferrableTables(configuration.schema, on: c)
                deferrableTables.withLock { $0 = found }
            } catch {
                rollbackSave()
                throw storeError(.storeWriteFailed, error, "Reading the store's constraints failed")
            }
        }
        var executor = BatchExecutor(writer: PostgreSQLBatchWriter(store: self, connection: c))
        do {
            return try executor.run(request, author: author, contextName: contextName)
        } catch {
            rollbackSave()
            throw error
        }
    }
}

/// A batch request's row operations on a PostgreSQL store's writer connection, inside its open
/// transaction. Every statement comes from the store's `SQLGenerator` (PostgreSQL dialect). A
/// write a unique index refuses changes nothing and leaves the transaction usable: inserts are
/// `ON CONFLICT DO NOTHING`, updates of constrained tables run inside a savepoint.
struct PostgreSQLBatchWriter: BatchWriter {
    let store: PostgreSQLStore
    let connection: PostgreSQLConnection
    /// The INSERT of the last entity inserted (consecutive rows share it; placeholders
    /// numbered), with the attributes it binds after the key.
    /// The one-row INSERT last made, with its attributes, whether it has no `ON CONFLICT`
    /// clause and whether the entity's uniqueness constraints name one of its columns.
    var lastInsert: (entity: EntityDescription, sql: String, attributes: [AttributeDescription], plain: Bool, constrained: Bool)? =
        nil
    /// The multi-row INSERT of the last entity inserted several rows at once, for that many rows.
    var lastMultiInsert: (entity: EntityDescription, rows: Int, sql: String)? = nil
    /// The most rows one batch INSERT writes.
    static let insertChunkRows = 256

    var storeIdentifier: UUID { store.identifier }
    var storeLocation: String { store.locationDescription }
    private var generator: SQLGenerator { store.generator }

    /// With persistent history on, every request records one history transaction.
    var recordsChanges: Bool { store.tracksHistory }

    /// Records the request's history transaction in the request's open transaction.
    mutating func record(_ transaction: HistoryTransactionRecord) throws(CoherenceError) {
        try store.recordHistory(transaction, on: connection)
    }

    mutating func storedValues(of ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: [StoredValue]] {
        let store = self.store, connection = self.connection
        return try run("Reading the tombstones of deleted rows failed") { try store.storedValues(of: ids, on: connection) }
    }

    /// Runs `body`; a failure is a store error described as `what`.
    private func run<T>(_ what: @autoclosure () -> String, _ body: () throws -> T) throws(CoherenceError) -> T {
        do {
            return try body()
        } catch {
            throw store.storeError(.storeWriteFailed, error, what())
        }
    }

    /// Runs one of the generator's statements (placeholders numbered here).
    @discardableResult
    private func execute(_ sql: String, _ parameters: [StoredValue], _ what: @autoclosure () -> String) throws(CoherenceError)
        -> PostgreSQLResult
    {
        let store = self.store, connection = self.connection
        return try run(what()) { try connection.execute(store.numbered(sql), parameters) }
    }

    /// Rows of a query as (key, entity number) pairs.
    private static func keys(_ rows: [[StoredValue]]) -> [(primaryKey: Int64, entityNumber: Int)] {
        rows.compactMap { r in
            guard r.count >= 2, case .integer(let key) = r[0], case .integer(let number) = r[1] else { return nil }
            return (key, Int(number))
        }
    }

    mutating func allocateKeys(for root: EntityDescription, count: Int) throws(CoherenceError) -> Int64 {
        try store.allocateKeys(for: root, count: count)
    }

    mutating func insertRow(_ entity: EntityDescription, key: Int64, values: [StoredValue]) throws(CoherenceError) -> Bool {
        // (What the statement is made with is decided once per run of rows of one entity: the SQL
        // and the way it runs agree even if the deferrable tables are read again meanwhile.)
        let insert: (entity: EntityDescription, sql: String, attributes: [AttributeDescription], plain: Bool, constrained: Bool)
        if let last = lastInsert, last.entity === entity {
            insert = last
        } else {
            let attributes = entity.storedProperties.compactMap { $0 as? AttributeDescription }
            let plain = store.insertsWithoutArbiter(entity)
            let sql = store.numbered(generator.batchInsert(entity, attributes: attributes, onConflict: !plain))
            insert = (entity, sql, attributes, plain, PostgreSQLSaveWriter.changesConstrainedColumn(entity, entity.storedProperties))
            lastInsert = insert
        }
        let sql = insert.sql, constrained = insert.constrained
        var parameters: [StoredValue] = [.integer(key)]
        parameters.reserveCapacity(insert.attributes.count + 1)
        for a in insert.attributes { parameters.append(PostgreSQLSaveWriter.columnValue(values[a.slot], a)) }
        let store = self.store, connection = self.connection
        guard insert.plain else {
            return try run("Inserting a row of '\(entity.name)' failed") { try connection.execute(sql, parameters) }.affectedRows > 0
        }
        // Without `ON CONFLICT`: a refusal by the model's uniqueness constraints, inside a savepoint.
        return try run("Inserting a row of '\(entity.name)' failed") {
            try store.executeRefusable(sql, parameters, on: connection, savepoint: constrained) != nil
        }
    }

    /// Up to ``insertChunkRows`` rows per INSERT, within PostgreSQL's 65,535 parameters per statement.
    func insertChunkSize(_ entity: EntityDescription) -> Int {
        let parameters = entity.storedProperties.count { $0 is AttributeDescription } + 1
        return Swift.max(1, Swift.min(Self.insertChunkRows, Int(UInt16.max) / parameters))
    }

    /// One INSERT of several rows; on a table with uniqueness constraints inside a savepoint,
    /// rolled back when a unique index refused any row (the changed-row count says so).
    mutating func insertRows(_ entity: EntityDescription, _ rows: [(key: Int64, values: [StoredValue])]) throws(CoherenceError)
        -> Bool
    {
        let attributes = entity.storedProperties.compactMap { $0 as? AttributeDescription }
        let plain = store.insertsWithoutArbiter(entity)
        let sql: String
        if let last = lastMultiInsert, last.entity === entity, last.rows == rows.count {
            sql = last.sql
        } else {
            sql = generator.dialect.numberingPlaceholders(
                generator.batchInsert(entity, attributes: attributes, rows: rows.count, onConflict: !plain))
            if rows.count == insertChunkSize(entity) { lastMultiInsert = (entity, rows.count, sql) }
        }
        var parameters: [StoredValue] = []
        parameters.reserveCapacity(rows.count * (attributes.count + 1))
        for r in rows {
            parameters.append(.integer(r.key))
            for a in attributes { parameters.append(PostgreSQLSaveWriter.columnValue(r.values[a.slot], a)) }
        }
        let store = self.store, connection = self.connection, count = rows.count
        let constrained = PostgreSQLSaveWriter.changesConstrainedColumn(entity, entity.storedProperties)
        return try run("Inserting \(count) rows of '\(entity.name)' failed") {
            if plain {
                // Without `ON CONFLICT`: a refusal by the model's uniqueness constraints, inside a savepoint.
                return try store.executeRefusable(sql, parameters, on: connection, savepoint: constrained) != nil
            }
            guard constrained else {
                let inserted = try connection.execute(sql, parameters).affectedRows
                guard inserted == count else {
                    throw CoherenceError(.storeWriteFailed, "The INSERT wrote \(inserted) of \(count) rows.", entity: entity.name)
                }
                return true
            }
            try connection.execute("SAVEPOINT coherence_batch_insert")
            if try connection.execute(sql, parameters).affectedRows == count {
                try connection.execute("RELEASE SAVEPOINT coherence_batch_insert")
                return true
            }
            try connection.execute("ROLLBACK TO SAVEPOINT coherence_batch_insert")
            try connection.execute("RELEASE SAVEPOINT coherence_batch_insert")
            return false
        }
    }

    mutating func uniquenessMatches(_ entity: EntityDescription, values: [StoredValue]) throws(CoherenceError) -> [(
        constraint: [String], rows: [ObjectID]
    )] {
        try uniquenessMatches(entity, values: values) { (e, properties) throws(CoherenceError) -> [(Int64, Int)] in
            let sql = generator.selectUniquenessMatches(entity, constraint: properties, declaringEntity: e)
            let parameters = properties.map { PostgreSQLSaveWriter.columnValue(values[$0.slot], $0) }
            return Self.keys(try execute(sql, parameters, "Reading rows in a batch request failed").rows).map {
                ($0.primaryKey, $0.entityNumber)
            }
        }
    }

    mutating func row(_ id: ObjectID) throws(CoherenceError) -> StoreRow? {
        let plan = store.plan(for: id.entity.rootEntity)
        let store = self.store, connection = self.connection
        let sql = store.numbered(generator.selectOne(id.entity, plan: plan))
        return try run("Reading a row failed") {
            try connection.query(sql, [.integer(id.primaryKey)]) { result in try store.rows(result, plan: plan).first }
        }
    }

    mutating func updateRows(
        _ entity: EntityDescription, keys: [Int64], properties: [PropertyDescription],
        values: [StoredValue]
    ) throws(CoherenceError) -> Bool {
        guard !keys.isEmpty else { return true }
        var parameters = zip(properties, values).map { PostgreSQLSaveWriter.columnValue($1, $0) }
        parameters.append(.text(generator.keyList(keys)))
        let sql = store.numbered(generator.updateRows(entity, properties: properties))
        let store = self.store, connection = self.connection
        let constrained = PostgreSQLSaveWriter.changesConstrainedColumn(entity, properties)
        return try run("Updating rows of '\(entity.name)' failed") {
            try store.executeRefusable(sql, parameters, on: connection, savepoint: constrained) != nil
        }
    }

    mutating func keys(matching fetch: StoreFetch, foreignKeys: [RelationshipDescription]) throws(CoherenceError) -> (
        keys: [(primaryKey: Int64, entityNumber: Int)], foreignKeys: [[Int64: Int64]]
    ) {
        let (sql, bindings) = try generator.selectKeys(fetch, foreignKeys: foreignKeys, storeIdentifier: storeIdentifier)
        let rows = try execute(sql, bindings, "Reading rows in a batch request failed").rows
        let keys = Self.keys(rows)
        var values = [[Int64: Int64]](repeating: [:], count: foreignKeys.count)
        for r in rows {
            guard case .integer(let key) = r[0] else { continue }
            for n in values.indices where 2 + n < r.count { if case .integer(let v) = r[2 + n] { values[n][key] = v } }
        }
        return (keys, values)
    }

    mutating func existingKeys(of entity: EntityDescription, among keys: [Int64]) throws(CoherenceError) -> [(
        primaryKey: Int64, entityNumber: Int
    )] {
        guard !keys.isEmpty else { return [] }
        return Self.keys(
            try execute(generator.selectKeys(entity), [.text(generator.keyList(keys))], "Reading rows in a batch request failed").rows)
    }

    mutating func related(_ relationship: RelationshipDescription, sources: [Int64]) throws(CoherenceError) -> RelatedKeys {
        guard !sources.isEmpty else { return [:] }
        guard let sql = generator.selectRelated(relationship) else {
            throw CoherenceError(
                .invalidRequest, "Relationship '\(relationship.name)' is not stored.", property: relationship.name, store: storeLocation)
        }
        let rows = try execute(sql, [.text(generator.keyList(sources))], "Reading related rows in a batch request failed").rows
        return PostgreSQLStore.relatedKeys(rows)
    }

    mutating func deleteJoinRows(_ relationship: RelationshipDescription, keys: [Int64], destinations: Bool) throws(CoherenceError) {
        guard !keys.isEmpty, let sql = generator.deleteJoinRows(relationship, destinations: destinations) else { return }
        try execute(sql, [.text(generator.keyList(keys))], "Removing join rows of '\(relationship.name)' failed")
    }

    mutating func deleteRows(_ root: EntityDescription, keys: [Int64]) throws(CoherenceError) {
        guard !keys.isEmpty else { return }
        try execute(generator.deleteRows(root), [.text(generator.keyList(keys))], "Deleting rows of '\(root.name)' failed")
    }

    mutating func deleteRows(matching fetch: StoreFetch) throws(CoherenceError) {
        let (sql, bindings) = try generator.deleteRows(fetch, storeIdentifier: storeIdentifier)
        try execute(sql, bindings, "Deleting rows of '\(fetch.entity.name)' failed")
    }
}
