import Foundation

/// A store in a PostgreSQL schema: the SQLite store's tables (one per entity hierarchy, with
/// `Z_PK`, `Z_ENT` and the row version `Z_OPT`; `Z_METADATA`; `Z_PRIMARYKEY`) in the schema the
/// URL names, SQL from ``SQLGenerator`` in its PostgreSQL dialect.
///
/// Reads use a pool of connections (at most the URL's `pool_size` kept idle); writes use one
/// writer connection, only under the coordinator's save lock, in a `READ COMMITTED` transaction
/// whose updates and deletes check the row version (a row another client changed is a version
/// conflict).
///
/// A connection the server dropped (a restart, a network failure) is replaced: a read retries
/// once on a new connection, a save that was under way fails with `.connectionLost` (its
/// transaction never committed, so nothing changed) and the next save reconnects. Statement and
/// lock timeouts are `.timeout`.
package final class PostgreSQLStore: StoreEngine, RemoteChangeSource {
    package let identifier: UUID
    package let configurationName: String?
    package let metadata: [String: String]
    package let entities: [EntityDescription]
    let configuration: PostgreSQLConfiguration
    let generator = SQLGenerator(dialect: .postgreSQL)

    let writer: PostgreSQLConnectionBox
    private let readers = LockedValue<(idle: [PostgreSQLConnection], isClosed: Bool)>(([], false))
    private let plans = LockedValue<[ObjectIdentifier: SelectPlan]>([:])
    /// Whether commits notify the store's other coordinators (`remoteChangeNotificationPost`).
    let notifiesCommits: Bool
    /// This store object's name in its commits' notifications (so its listener skips them).
    let sender = UUID().uuidString.lowercased()
    /// The listener of the other coordinators' commits, once started.
    private let listener = LockedValue<(listener: PostgreSQLListener?, isClosed: Bool)>((nil, false))
    /// The snapshots of query generations opened on this store, detached when it closes.
    let openSnapshots = OpenSnapshots<PostgreSQLSnapshot>()
    /// Test hook: called as a snapshot just opened is noted (its transaction begun).
    let openSnapshotHook = LockedValue<(@Sendable () -> Void)?>(nil)
    /// Generated SQL with numbered placeholders, by the generator's text; at most
    /// ``numberedLimit`` texts (fetches with many different predicates must not grow it without end).
    private let numbered = LockedValue<[String: String]>([:])
    /// The most SQL texts ``numbered(_:)`` keeps; a full cache starts over.
    static let numberedLimit = 512
    /// How many rows each fetch's SQL (numbered) returned the last time it ran, for the last
    /// ``numberedLimit`` texts at most: what the next run of the same SQL expects.
    let rowCounts = LockedValue<[String: Int]>([:])
    /// When a fetch reads through a cursor, in chunks (see ``fetch(_:expecting:each:)``): from
    /// how many expected rows, and how many rows per chunk.
    let chunking = LockedValue<(minimumRows: Int, chunkSize: Int)>((20_000, 2_000))

    package var locationDescription: String { configuration.redactedURL }
    /// Whether the store records persistent history (see PostgreSQLStore+History.swift).
    package let tracksHistory: Bool
    /// The history transactions of this store object's saves.
    let historyCommits = LockedValue(HistoryCommits())
    /// Test hook: called in each history fetch with its reader connection, inside the fetch's
    /// transaction and before the history is read (a test ends the connection there).
    let historyFetchHook = LockedValue<(@Sendable (PostgreSQLConnection) throws -> Void)?>(nil)
    /// The tables with a deferrable unique or exclusion constraint (see
    /// `PostgreSQLStore+DeferrableIndexes.swift`): inserted into without `ON CONFLICT`.
    let deferrableTables: LockedValue<Set<String>>
    /// The server's ID of the writer connection's open transaction (`txid_current()`, taken
    /// with its `BEGIN`), so that a `COMMIT` whose connection is lost can be looked up.
    let writerTransactionID = LockedValue<Int64?>(nil)
    /// The unique indexes of the model's uniqueness constraints as last checked (see
    /// `PostgreSQLStore+UniqueIndexes.swift`), as the open left them.
    let checkedUniqueIndexes = LockedValue<String?>(nil)
    /// Tests: runs after each repair of the unique indexes in ``beginWriterTransaction(_:reserving:repairs:)``,
    /// before the write starts over (a test changes the indexes again there).
    let uniqueIndexRepairHook = LockedValue<(@Sendable () throws(CoherenceError) -> Void)?>(nil)
    /// How many times one write transaction repairs the unique indexes before it gives up.
    static let maximumUniqueIndexRepairs = 3

    /// Opens the store in the URL's schema, creating the schema and its tables when the schema
    /// has none. Openers are serialized by an advisory lock on the schema's name, so that two
    /// processes opening a new store make it once.
    /// - Throws: `.storeOpenFailed` (bad URL, server unreachable, refused),
    ///   `.storeIncompatible` (a schema made for another model, or with tables that are not a
    ///   Coherence store's), `.historyTrackingRequired` (the store records persistent history and
    ///   the options do not turn it on), `.migrationNotInferable`, `.migrationMissingValues`,
    ///   `.migrationUniquenessViolated`, `.migrationFailed` (a store made with another version of the
    ///   model is migrated first, in the same transaction; when that fails the store is left as it was).
    package init(url: URL, model: ManagedObjectModel, configuration configurationName: String?, options: StoreOptions)
        throws(CoherenceError)
    {
        let configuration: PostgreSQLConfiguration
        do {
            configuration = try PostgreSQLConfiguration(url: url)
        } catch {
            throw Self.error(.storeOpenFailed, error, "The store URL is not valid", store: error.location)
        }
        let location = configuration.redactedURL
        guard let entities = model.entities(forConfiguration: configurationName) else {
            throw CoherenceError(.storeOpenFailed, "The model has no configuration named '\(configurationName ?? "")'.", store: location)
        }
        let connection: PostgreSQLConnection
        do {
            connection = try PostgreSQLConnection(configuration)
        } catch {
            throw Self.error(.storeOpenFailed, error, "Cannot open the store", store: location)
        }
        let generator = self.generator
        let expectedHash = model.versionHash(forConfiguration: configurationName) ?? model.versionHash
        var metadata: [String: String] = [:]
        var deferrable: Set<String> = []
        var uniqueIndexes: String?
        let functions = generator.createFunctions()
        let functionsHash = StableHash.hex(functions.joined(separator: "\n"))
        do {
            try Self.makeSchema(configuration.schema, on: connection, generator: generator)
            try connection.execute("BEGIN")
            try connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text("coherence:" + configuration.schema)])
            let sql = { (text: String) in generator.dialect.numberingPlaceholders(text) }
            if (try connection.execute(generator.metadataTableExists).firstInteger ?? 0) > 0 {
                for row in try connection.execute(generator.readMetadata).rows {
                    if case .text(let k) = row[0], case .text(let v) = row[1] { metadata[k] = v }
                }
                if metadata["modelVersionHash"] != expectedHash {
                    try Self.migrate(
                        connection, metadata: &metadata, entities: entities, model: model, expectedHash: expectedHash, options: options,
                        store: location)
                }
                // Stores made by an earlier version keep their SQL functions until they are
                // replaced here (the folding the predicates use must be today's).
                if metadata[Self.functionsKey] != functionsHash {
                    for statement in functions { try connection.execute(statement) }
                    metadata[Self.functionsKey] = functionsHash
                    try connection.execute(sql(generator.writeMetadata), [.text(Self.functionsKey), .text(functionsHash)])
                }
                // A table without a column the model's layout has gets it (see StoreLayoutRepair).
                try StoreLayoutRepair.addMissingColumns(
                    on: PostgreSQLMigrationDatabase(connection: connection), entities: entities, generator: generator)
                // A unique index another program dropped is made again (see StoreLayoutRepair).
                try StoreLayoutRepair.addMissingUniqueIndexes(
                    on: PostgreSQLMigrationDatabase(connection: connection), entities: entities, generator: generator, store: location)
                if let schema = StoreLayoutRepair.repairedSchema(metadata["schema"], entities: entities) {
                    metadata["schema"] = schema
                    try connection.execute(sql(generator.writeMetadata), [.text("schema"), .text(schema)])
                }
            } else {
                guard (try connection.execute(generator.userTableCount).firstInteger ?? 0) == 0 else {
                    throw CoherenceError(
                        .storeIncompatible, "The schema '\(configuration.schema)' has tables but is not a Coherence store.", store: location
                    )
                }
                metadata = [
                    "storeUUID": UUID().uuidString,
                    "modelVersionHash": expectedHash,
                    "configuration": configurationName ?? ManagedObjectModel.defaultConfigurationName,
                    "storeType": "PostgreSQL",
                    "formatVersion": "1",
                    Self.functionsKey: functionsHash
                ]
                metadata.merge(StoredSchema.versionMetadata(entities: entities, model: model)) { _, new in new }
                for statement in functions + generator.createMetadataTables() + generator.createSchema(for: entities) {
                    try connection.execute(statement)
                }
                for (k, v) in metadata.sorted(by: { $0.key < $1.key }) {
                    try connection.execute(sql(generator.writeMetadata), [.text(k), .text(v)])
                }
                for e in entities where e.superentity == nil {
                    try connection.execute(sql(generator.initPrimaryKey), [.integer(Int64(e.entityNumber)), .text(e.name)])
                }
            }
            try Self.prepareHistory(on: connection, tracking: options.persistentHistoryTracking, store: location)
            deferrable = try Self.deferrableTables(configuration.schema, on: connection)
            // The unique indexes as this open left them: the first write need not check them.
            if let query = Self.uniqueIndexFingerprintQuery(of: entities),
                case .text(let text)? = try connection.execute(query).rows.first?.first
            {
                uniqueIndexes = text
            }
            try connection.execute("COMMIT")
        } catch let error as CoherenceError {
            _ = try? connection.execute("ROLLBACK")
            throw error
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw Self.error(.storeOpenFailed, error, "Cannot open the store", store: location)
        }
        guard let uuidText = metadata["storeUUID"], let uuid = UUID(uuidString: uuidText) else {
            throw CoherenceError(.storeIncompatible, "The store's metadata has no valid store UUID.", store: location)
        }
        self.identifier = uuid
        self.configurationName = configurationName
        self.metadata = metadata
        self.entities = entities
        self.configuration = configuration
        self.notifiesCommits = options.remoteChangeNotificationPost
        self.tracksHistory = options.persistentHistoryTracking
        self.writer = PostgreSQLConnectionBox(connection)
        self.deferrableTables = LockedValue(deferrable)
        self.checkedUniqueIndexes.withLock { $0 = uniqueIndexes }
    }

    /// The metadata key of a hash of the store's SQL functions (``SQLGenerator/createFunctions()``):
    /// when it differs from today's, opening the store replaces them.
    static let functionsKey = "functionsHash"

    deinit { close() }

    package func close() {
        let idle = readers.withLock { pool -> [PostgreSQLConnection] in
            pool.isClosed = true
            defer { pool.idle.removeAll() }
            return pool.idle
        }
        for c in idle { c.close() }
        openSnapshots.detachAll()
        listener.withLock { state -> PostgreSQLListener? in
            state.isClosed = true
            defer { state.listener = nil }
            return state.listener
        }?.stop()
        writer.close()
    }

    // MARK: Remote changes

    package func startRemoteChanges(_ onChange: @escaping @Sendable (PersistentHistoryToken?) -> Void) throws(CoherenceError) {
        let started: PostgreSQLListener
        do {
            started = try PostgreSQLListener(configuration: configuration, storeIdentifier: identifier, sender: sender, onChange: onChange)
        } catch {
            throw storeError(.storeOpenFailed, error, "Cannot listen to the store's remote changes")
        }
        let kept = listener.withLock { state -> Bool in
            guard !state.isClosed else { return false }
            state.listener?.stop()
            state.listener = started
            return true
        }
        if kept { started.start() }
    }

    /// Whether the store listens to its other coordinators' commits.
    var isListening: Bool { listener.withLock { $0.listener != nil } }

    /// How many commit notifications the listener has handled, its own included (for tests).
    var notificationsHandled: Int { listener.withLock { $0.listener }?.handled.withLock { $0 } ?? 0 }

    /// Commits the transaction on `c`, telling the store's other coordinators about it when the
    /// store notifies commits: the notification (`pg_notify`, carrying `token`, the commit's
    /// history token, nil without history) is sent inside the transaction, so it goes out when
    /// it commits and never when it rolls back, in the same round trip as the `COMMIT`.
    /// - Throws: the failure of either statement (the `COMMIT` does not run after a failed
    ///   notification; a refused `COMMIT` rolls the transaction back).
    func commit(on c: PostgreSQLConnection, token: PersistentHistoryToken?) throws(PostgreSQLError) {
        guard notifiesCommits else {
            try c.execute("COMMIT")
            return
        }
        let notification: [StoredValue] = [
            .text(PostgreSQLListener.channel(of: identifier)), .text(PostgreSQLListener.payload(sender: sender, token: token))
        ]
        _ = try c.executePipelined([("SELECT pg_notify($1, $2)", notification), ("COMMIT", [])])
    }

    /// Makes the store's schema unless it exists. A role that may not create schemas in the
    /// database can open one made for it (PostgreSQL checks that privilege before it looks
    /// whether the schema exists). Openers that race to make it (`IF NOT EXISTS` does not
    /// serialize them) find it made by the winner.
    /// SQLSTATE `42P06`, duplicate_schema.
    private static let duplicateSchema = "42P06"

    static func makeSchema(_ schema: String, on connection: PostgreSQLConnection, generator: SQLGenerator) throws {
        let exists = "SELECT count(*) FROM pg_namespace WHERE nspname = $1"
        if (try connection.execute(exists, [.text(schema)]).firstInteger ?? 0) > 0 { return }
        var failure: (any Error)?
        do {
            try connection.execute("CREATE SCHEMA IF NOT EXISTS \(generator.dialect.quote(schema))")
        } catch {
            failure = error
        }
        guard let failure else { return }
        // Made meanwhile by another opener (a duplicate key of pg_namespace, or duplicate_schema)?
        let postgres = failure as? PostgreSQLError
        let raced = postgres?.isUniqueViolation == true || postgres?.sqlState == Self.duplicateSchema
        if raced, (try connection.execute(exists, [.text(schema)]).firstInteger ?? 0) > 0 { return }
        throw failure
    }

    /// A store error (`code`) for a libpq failure, with the SQL and the PostgreSQL error in
    /// `underlyingErrors`; a `CoherenceError` is returned as it is. Once the store is open, a
    /// lost connection is `.connectionLost` and a statement or lock timeout `.timeout`.
    static func error(_ code: CoherenceError.Code, _ error: any Error, _ what: String, store: String?) -> CoherenceError {
        if let e = error as? CoherenceError { return e }
        let postgres = error as? PostgreSQLError
        let code: CoherenceError.Code =
            code == .storeOpenFailed
            ? code
            : postgres?.isConnectionLoss == true ? .connectionLost : postgres?.isTimeout == true ? .timeout : code
        var e = CoherenceError(code, "\(what): \(postgres?.message ?? "\(error)")", store: store, sql: postgres?.sql)
        e.underlyingErrors = [postgres ?? PostgreSQLError(message: "\(error)", location: store)]
        return e
    }

    func storeError(_ code: CoherenceError.Code, _ error: any Error, _ what: String) -> CoherenceError {
        Self.error(code, error, what, store: locationDescription)
    }

    /// The generator's SQL with numbered placeholders (worked out once per text, for the last
    /// ``numberedLimit`` texts at most: the cache starts over when it is full).
    func numbered(_ sql: String) -> String {
        if let s = numbered.withLock({ $0[sql] }) { return s }
        let s = generator.dialect.numberingPlaceholders(sql)
        numbered.withLock { cache in
            if cache.count >= Self.numberedLimit { cache.removeAll(keepingCapacity: true) }
            cache[sql] = s
        }
        return s
    }

    /// How many SQL texts ``numbered(_:)`` keeps now (for tests).
    var numberedCount: Int { numbered.withLock { $0.count } }

    // MARK: Connections

    /// Runs `body` on the snapshot's connection, or on a reader connection of the pool. When
    /// the pool's connection turns out to be lost (the server restarted since it was used), the
    /// idle ones are dropped too and `body` runs once more on a new connection.
    func withReader<T>(_ snapshot: (any StoreSnapshot)?, _ body: (PostgreSQLConnection) throws -> T) throws(CoherenceError) -> T {
        if let snapshot = snapshot as? PostgreSQLSnapshot {
            return try snapshot.read { (c: PostgreSQLConnection) throws(CoherenceError) -> T in
                do { return try body(c) } catch { throw storeError(.storeReadFailed, error, "Reading the store failed") }
            }
        }
        var attempt = 0
        while true {
            attempt += 1
            let c = try takeReader()
            do {
                let value = try body(c)
                returnReader(c)
                return value
            } catch {
                let lost = (error as? PostgreSQLError)?.isConnectionLoss == true
                if c.isOpen && !c.isInTransaction { returnReader(c) } else { c.close() }
                guard lost, attempt == 1 else { throw storeError(.storeReadFailed, error, "Reading the store failed") }
                dropIdleReaders()
            }
        }
    }

    /// How many reader connections are idle in the pool.
    var idleReaderCount: Int { readers.withLock { $0.idle.count } }

    /// Whether the store closed its reader pool (``close()``).
    var readersClosed: Bool { readers.withLock { $0.isClosed } }

    /// Closes the idle reader connections (after one of them was found lost).
    func dropIdleReaders() {
        let idle = readers.withLock { pool -> [PostgreSQLConnection] in
            defer { pool.idle.removeAll() }
            return pool.idle
        }
        for c in idle { c.close() }
    }

    /// A reader connection: an idle one of the pool, or a new one.
    func takeReader() throws(CoherenceError) -> PostgreSQLConnection {
        let taken = readers.withLock { pool -> (PostgreSQLConnection?, Bool) in
            if pool.isClosed { return (nil, true) }
            return (pool.idle.popLast(), false)
        }
        if taken.1 { throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription) }
        if let c = taken.0, c.isOpen { return c }
        do {
            return try PostgreSQLConnection(configuration)
        } catch {
            throw storeError(.storeReadFailed, error, "Cannot connect to the server")
        }
    }

    /// Puts a reader connection back in the pool (when it has room and the store is open).
    func returnReader(_ c: PostgreSQLConnection) {
        let kept = readers.withLock { pool -> Bool in
            guard !pool.isClosed && pool.idle.count < configuration.poolSize && c.isOpen else { return false }
            pool.idle.append(c)
            return true
        }
        if !kept { c.close() }
    }

    /// The writer connection (used only under the coordinator's save lock); a new one when the
    /// last one was lost.
    func writerConnection() throws(CoherenceError) -> PostgreSQLConnection {
        guard let c = writer.connection else {
            throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription)
        }
        if c.isOpen { return c }
        return try reconnectWriter()
    }

    /// Replaces the writer connection with a new one (under the coordinator's save lock).
    /// - Throws: `.connectionLost` when the server cannot be reached.
    @discardableResult
    func reconnectWriter() throws(CoherenceError) -> PostgreSQLConnection {
        do {
            let c = try PostgreSQLConnection(configuration)
            guard writer.replace(with: c) else {
                c.close()
                throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription)
            }
            return c
        } catch let error as CoherenceError {
            throw error
        } catch {
            throw storeError(.connectionLost, error, "Cannot reconnect to the server")
        }
    }

    // MARK: Reads

    func plan(for entity: EntityDescription) -> SelectPlan {
        let key = ObjectIdentifier(entity)
        if let p = plans.withLock({ $0[key] }) { return p }
        let p = generator.selectPlan(for: entity)
        plans.withLock { $0[key] = p }
        return p
    }

    package func fetchKeys(_ fetch: StoreFetch) throws(CoherenceError) -> [(primaryKey: Int64, entityNumber: Int)] {
        let (sql, bindings) = try generator.select(fetch, plan: nil, storeIdentifier: identifier)
        let result = try withReader(fetch.generation?.snapshot(of: identifier)) { c in try c.execute(numbered(sql), bindings) }
        return result.rows.compactMap { r in
            guard r.count >= 2, case .integer(let pk) = r[0], case .integer(let n) = r[1] else { return nil }
            return (pk, Int(n))
        }
    }

    package func count(_ fetch: StoreFetch) throws(CoherenceError) -> Int {
        var f = fetch
        f.sortKeys = []
        f.limit = nil
        f.offset = 0
        let (sql, bindings) = try generator.select(f, plan: nil, storeIdentifier: identifier, count: true)
        let result = try withReader(fetch.generation?.snapshot(of: identifier)) { c in try c.execute(numbered(sql), bindings) }
        let total = Int(result.firstInteger ?? 0)
        let afterOffset = max(0, total - fetch.offset)
        return fetch.limit.map { min($0, afterOffset) } ?? afterOffset
    }

    package func rows(of entity: EntityDescription, keys: [Int64], in snapshot: (any StoreSnapshot)?) throws(CoherenceError) -> [StoreRow] {
        guard !keys.isEmpty else { return [] }
        let plan = self.plan(for: entity.rootEntity)
        let sql = numbered(generator.selectByKeys(entity, plan: plan))
        return try withReader(snapshot) { c in
            try c.query(sql, [.text(generator.keyList(keys))]) { result in try rows(result, plan: plan) }
        }
    }

    package func related(
        _ relationship: RelationshipDescription, sources: [Int64], in snapshot: (any StoreSnapshot)?
    ) throws(CoherenceError) -> RelatedKeys {
        guard !sources.isEmpty else { return [:] }
        guard let sql = generator.selectRelated(relationship) else {
            throw CoherenceError(.invalidRequest, "Relationship '\(relationship.name)' is not stored.", property: relationship.name)
        }
        let result = try withReader(snapshot) { c in try c.execute(numbered(sql), [.text(generator.keyList(sources))]) }
        return Self.relatedKeys(result.rows)
    }

    package func allocateKeys(for entity: EntityDescription, count: Int) throws(CoherenceError) -> Int64 {
        let c = try writerConnection()
        let root = entity.rootEntity
        do {
            // One statement: atomic on its own, or part of the open save's transaction.
            let result = try c.execute(
                numbered(generator.allocatePrimaryKeys(root)), [.integer(Int64(count)), .integer(Int64(root.entityNumber))])
            guard let last = result.firstInteger else {
                throw CoherenceError(
                    .corruptRow, "No primary-key counter for entity '\(root.name)'.", entity: root.name, store: locationDescription)
            }
            return last - Int64(count) + 1
        } catch {
            throw storeError(.storeWriteFailed, error, "Allocating primary keys failed")
        }
    }
}

/// A connection shared between the store and the thread using it.
final class PostgreSQLConnectionBox: @unchecked Sendable {
    // @unchecked Sendable: the writer is used only under the coordinator's save lock; `close`
    // runs under it too (the coordinator removes a store under its save lock).
    private(set) var connection: PostgreSQLConnection?
    init(_ connection: PostgreSQLConnection) { self.connection = connection }
    /// Puts `new` in place of the open connection (closing the old one); false once closed.
    func replace(with new: PostgreSQLConnection) -> Bool {
        guard let old = connection else { return false }
        old.close()
        connection = new
        return true
    }
    func close() {
        connection?.close()
        connection = nil
    }
}
