import CCoherenceSQLite
import Foundation

/// A store in a SQLite file: one table per entity hierarchy, WAL journal, row versions for
/// optimistic locking, metadata that records the model's version hash.
///
/// Reads use a small pool of connections, so readers run while a writer writes (WAL); writes use
/// one writer connection, only under the coordinator's save lock.
package final class SQLiteStore: StoreEngine {
    package let identifier: UUID
    package let configurationName: String?
    package let metadata: [String: String]
    package let url: URL
    /// `url.path`, made once: `URL.path` decodes the URL's percent escapes on every call, and
    /// every save names its store's location.
    package let path: String
    package let entities: [EntityDescription]
    /// `PRAGMA synchronous` of every connection (the store's option).
    let synchronous: StoreOptions.Synchronous
    /// The store's SQL, with its names (Core Data's, for a store made by Core Data).
    let generator: SQLGenerator

    private let writer: ConnectionBox
    private let readers = LockedValue<ReaderPool>(ReaderPool())
    private let plans = LockedValue<[ObjectIdentifier: SelectPlan]>([:])
    /// Primary keys reserved in the store but not handed out yet, by root entity: saves take keys
    /// from here instead of running the allocation statement every time. Reserved inside a save's
    /// transaction and forgotten when that transaction rolls back.
    private let keyBlocks = LockedValue<[ObjectIdentifier: (next: Int64, end: Int64)]>([:])
    /// How many keys a save reserves at least.
    static let keyBlockSize = 64
    /// Generated write SQL by statement shape, so a save does not rebuild SQL text per row.
    private let writeSQL = LockedValue<[WriteShape: String]>([:])
    /// How each entity's rows bind to its INSERT, worked out once per entity.
    private let insertLayouts = LockedValue<[ObjectIdentifier: InsertLayout]>([:])

    /// The INSERT layout of an entity (made on first use).
    func insertLayout(for entity: EntityDescription) -> InsertLayout {
        let key = ObjectIdentifier(entity)
        if let layout = insertLayouts.withLock({ $0[key] }) { return layout }
        let layout = InsertLayout(entity: entity, sql: generator.insert(entity))
        insertLayouts.withLock { $0[key] = layout }
        return layout
    }

    /// The shape of a write statement.
    enum WriteShape: Hashable {
        case update(ObjectIdentifier, slots: [Int], checkVersion: Bool)
        case delete(ObjectIdentifier, checkVersion: Bool)
    }

    /// The SQL for a write shape, generated once.
    func sql(_ shape: WriteShape, _ make: () -> String) -> String {
        if let s = writeSQL.withLock({ $0[shape] }) { return s }
        let s = make()
        writeSQL.withLock { $0[shape] = s }
        return s
    }
    /// Whether the store records persistent history (``StoreOptions/persistentHistoryTracking``).
    package let tracksHistory: Bool
    /// The schema version (`PRAGMA schema_version`) at which the file last was found at this
    /// store's model version (and, for a store opened without history, without history tables),
    /// -1 before the first write. See ``refuseWritesToAChangedStore(_:)``.
    let checkedSchemaVersion = LockedValue<Int64>(-1)
    /// The number of the history transaction the open save wrote (`pending`) and of the last one
    /// this store object committed (`last`).
    let historyCommits = LockedValue(HistoryCommits())
    /// Test hook: a trace installed on reader connections as they are used.
    private let readerTrace = LockedValue<(@Sendable (String) -> Void)?>(nil)
    /// The file's journal mode as SQLite reported it after opening (`wal` unless the file could
    /// not be switched, or the store was opened without WAL).
    let journalMode: String
    /// The snapshots of pinned query generations that are open, closed with the store.
    let openSnapshots = OpenSnapshots<SQLiteSnapshot>()

    struct ReaderPool {
        var idle: [ConnectionBox] = []
        var isClosed = false
    }

    package var locationDescription: String { path }

    /// Opens or creates the store at `url` for the entities of `configuration`.
    ///
    /// Looking changes nothing: the file is only read until it is known to be a store of this
    /// model (or empty, to become one); only then is it switched to WAL and, when new, given its
    /// schema. A file that is refused is left byte for byte as it was, journal mode included,
    /// and so is a write-ahead log it had (closing does not checkpoint it).
    /// With `historyTracking`, the store records persistent history (its tables are created
    /// when missing); without it, a store that has history is refused. Without `writeAheadLog`
    /// the file uses a rollback journal (`DELETE`): the store works, but cannot hold query
    /// generations.
    /// With `migratesAutomatically`, a store made with another version of the model is migrated
    /// (``InferredMigration``) in one transaction before it is used.
    /// A store made by Apple's Core Data (``CoreDataLayout``) is used in its own layout: the
    /// generator takes the names found in the file.
    /// - Throws: `.storeOpenFailed` (missing directory, unreadable or non-SQLite file),
    ///   `.storeIncompatible` (made for another model, or not a Coherence store),
    ///   `.migrationNotInferable`, `.migrationMissingValues`, `.migrationUniquenessViolated`,
    ///   `.migrationFailed` (the store is left as it was),
    ///   `.historyTrackingRequired` (the store has history and `historyTracking` is off),
    ///   `.storeLayoutMismatch` (a store made by Core Data that does not fit the model).
    package init(
        url: URL, model: ManagedObjectModel, configuration: String?,
        synchronous: StoreOptions.Synchronous = .normal, historyTracking: Bool = false,
        writeAheadLog: Bool = true, migratesAutomatically: Bool = false
    ) throws(CoherenceError) {
        let path = url.path
        guard let entities = model.entities(forConfiguration: configuration) else {
            throw CoherenceError(.storeOpenFailed, "The model has no configuration named '\(configuration ?? "")'.", store: path)
        }
        var isDirectory: ObjCBool = false
        let directory = url.deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw CoherenceError(.storeOpenFailed, "The directory \(directory) does not exist.", store: path)
        }
        // A log left by a program that crashed is not checkpointed into a file this refuses.
        let hadLog = FileManager.default.fileExists(atPath: path + "-wal")
        // Store files are readable by their owner only, from the moment they exist: made here
        // with that mode before SQLite opens them (SQLite gives the -wal and -shm files the
        // main file's mode).
        try OwnerOnlyFiles.createFile(atPath: path)
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(
                location: .file(path), switchesToWAL: false, synchronous: synchronous.connectionSetting, functions: SQLFunctions.register)
        } catch {
            throw Self.openError(error, path: path)
        }
        let expectedHash = model.versionHash(forConfiguration: configuration) ?? model.versionHash
        let generator = SQLGenerator(dialect: .sqlite)
        var naming = SQLNaming.coherence
        var metadata: [String: String] = [:]
        let switchJournal = { () throws(SQLiteError) in
            if writeAheadLog { try connection.switchToWAL() } else { try connection.execute("PRAGMA journal_mode=DELETE") }
        }
        var journalMode = ""
        // Another coordinator or program may make or migrate the file between this opener's look
        // and its write: the write transaction looks again and, when it finds the file changed,
        // writes nothing and the open starts over (a few times at most).
        var restarts = 0
        opening: while true {
            do {
                metadata = [:]
                naming = .coherence
                let hasMetadata = try connection.prepare(generator.metadataTableExists).rows { $0.int64(0) }.first ?? 0
                if try CoreDataLayout.isCoreDataStore(connection) {
                    (metadata, naming) = try Self.openCoreDataStore(
                        connection, entities: entities, model: model, path: path, expectedHash: expectedHash,
                        historyTracking: historyTracking, migratesAutomatically: migratesAutomatically, switchJournal: switchJournal)
                } else if hasMetadata > 0 {
                    for (k, v) in try connection.prepare(generator.readMetadata).rows({ ($0.string(0), $0.string(1)) }) {
                        metadata[k] = v
                    }
                    let needsMigration = metadata["modelVersionHash"] != expectedHash
                    let oldSchema = needsMigration ? StoredSchema(json: metadata["schema"]) : nil
                    if needsMigration {
                        guard migratesAutomatically, oldSchema != nil else {
                            let why =
                                migratesAutomatically
                                ? " It records no schema to migrate from (made by an older Coherence)."
                                : " Automatic migration is off (StoreOptions.migratesAutomatically)."
                            throw CoherenceError(
                                .storeIncompatible,
                                "The store was made for another model (store model hash \(metadata["modelVersionHash"] ?? "none"), this model's \(expectedHash)).\(why)",
                                store: path)
                        }
                    }
                    guard let uuidText = metadata["storeUUID"], UUID(uuidString: uuidText) != nil else {
                        throw CoherenceError(.storeIncompatible, "The store's metadata has no valid store UUID.", store: path)
                    }
                    // History is sticky: a store that records it is never written without recording.
                    let hasHistory = try Self.hasHistoryTables(connection)
                    if hasHistory && !historyTracking {
                        throw CoherenceError(
                            .historyTrackingRequired,
                            "The store records persistent history; open it with StoreOptions.persistentHistoryTracking on (it was left as it was).",
                            store: path)
                    }
                    if needsMigration, let oldSchema {
                        let migration = try InferredMigration(old: oldSchema, entities: entities, model: model, store: path)
                        let version = StoredSchema.versionMetadata(entities: entities, model: model)
                        var updated = version
                        updated["modelVersionHash"] = expectedHash
                        let recordedHash = metadata["modelVersionHash"]
                        Self.openHook.withLock { $0 }?(path, "migrate")
                        let migrated = try Self.migrate(connection, path: path) { () throws -> Bool in
                            // Migrated by another opener since this one looked: nothing to do here.
                            guard try Self.recordedModelHash(connection) == recordedHash else { return false }
                            try migration.run(on: connection)
                            if model.versionIdentifier == nil {
                                try connection.execute("DELETE FROM Z_METADATA WHERE Z_KEY = 'versionIdentifier'")
                            }
                            try Self.writeMetadata(updated, connection)
                            return true
                        }
                        guard migrated else { throw OpenRace() }
                        metadata["versionIdentifier"] = nil
                        metadata.merge(updated) { _, new in new }
                    }
                    try switchJournal()
                    // Stores made before versions were recorded get them now (same model).
                    var version = metadata["schema"] == nil ? StoredSchema.versionMetadata(entities: entities, model: model) : [:]
                    // A table without a column the model's layout has gets it (see StoreLayoutRepair).
                    let database = SQLiteMigrationDatabase(connection)
                    let lacksColumns = try StoreLayoutRepair.lacksColumns(on: database, entities: entities, generator: generator)
                    if version.isEmpty, let schema = StoreLayoutRepair.repairedSchema(metadata["schema"], entities: entities) {
                        version["schema"] = schema
                    }
                    // A unique index another program dropped is made again (see StoreLayoutRepair).
                    let lacksUniqueIndexes = try !StoreLayoutRepair.missingUniqueIndexes(
                        on: database, entities: entities, generator: generator
                    ).isEmpty
                    if (historyTracking && !hasHistory) || !version.isEmpty || lacksColumns || lacksUniqueIndexes {
                        try connection.writeTransaction {
                            if historyTracking && !hasHistory { try Self.createHistoryTables(connection) }
                            if lacksColumns {
                                try StoreLayoutRepair.addMissingColumns(on: database, entities: entities, generator: generator)
                            }
                            if lacksUniqueIndexes {
                                try StoreLayoutRepair.addMissingUniqueIndexes(
                                    on: database, entities: entities, generator: generator, store: path)
                            }
                            try Self.writeMetadata(version, connection)
                        }
                        metadata.merge(version) { _, new in new }
                    }
                } else {
                    let tables = try connection.prepare(generator.userTableCount).rows { $0.int64(0) }.first ?? 0
                    guard tables == 0 else {
                        // Made a store by another opener since this one looked.
                        if try Self.hasMetadataTable(connection, generator) { throw OpenRace() }
                        throw CoherenceError(.storeIncompatible, "The file is a SQLite database but not a Coherence store.", store: path)
                    }
                    try switchJournal()
                    metadata = [
                        "storeUUID": UUID().uuidString,
                        "modelVersionHash": expectedHash,
                        "configuration": configuration ?? ManagedObjectModel.defaultConfigurationName,
                        "storeType": "SQLite",
                        "formatVersion": "1"
                    ]
                    metadata.merge(StoredSchema.versionMetadata(entities: entities, model: model)) { _, new in new }
                    let meta = metadata
                    Self.openHook.withLock { $0 }?(path, "create")
                    try connection.writeTransaction {
                        // Another opener made the store (or tables) since this one looked.
                        if try Self.hasMetadataTable(connection, generator) { throw OpenRace() }
                        guard try connection.prepare(generator.userTableCount).rows({ $0.int64(0) }).first ?? 0 == 0 else {
                            throw CoherenceError(
                                .storeIncompatible, "The file is a SQLite database but not a Coherence store.", store: path)
                        }
                        for sql in generator.createMetadataTables() { try connection.execute(sql) }
                        for sql in generator.createSchema(for: entities) { try connection.execute(sql) }
                        if historyTracking { try Self.createHistoryTables(connection) }
                        try Self.writeMetadata(meta, connection)
                        let keys = try connection.prepare(generator.initPrimaryKey)
                        for e in entities where e.superentity == nil {
                            keys.bind(Int64(e.entityNumber), at: 1)
                            keys.bind(e.name, at: 2)
                            try keys.execute()
                        }
                    }
                }
                journalMode = try connection.prepare("PRAGMA journal_mode").rows { $0.string(0) }.first?.lowercased() ?? ""
                break opening
            } catch let error as CoherenceError {
                if hadLog { connection.leaveLogOnClose() }
                throw error
            } catch is OpenRace where restarts < 3 {
                restarts += 1
            } catch {
                if hadLog { connection.leaveLogOnClose() }
                throw Self.openError(error, path: path)
            }
        }
        guard let uuidText = metadata["storeUUID"], let uuid = UUID(uuidString: uuidText) else {
            throw CoherenceError(.storeIncompatible, "The store's metadata has no valid store UUID.", store: path)
        }
        self.identifier = uuid
        self.configurationName = configuration
        self.metadata = metadata
        self.url = url
        self.path = path
        self.entities = entities
        self.synchronous = synchronous
        self.tracksHistory = historyTracking
        self.writer = ConnectionBox(connection)
        self.journalMode = journalMode
        self.generator = SQLGenerator(dialect: .sqlite, naming: naming)
    }

    /// Runs a migration in one write transaction with foreign keys off (tables are renamed and
    /// dropped), and turns database errors into `.migrationFailed`.
    static func migrate<T>(_ connection: SQLiteConnection, path: String, _ body: () throws -> T) throws(CoherenceError) -> T {
        do {
            try connection.execute("PRAGMA foreign_keys=OFF")
            defer { try? connection.execute("PRAGMA foreign_keys=ON") }
            let result = try connection.writeTransaction { () throws -> T in
                let result = try body()
                let violations = try connection.prepare("PRAGMA foreign_key_check").rows { $0.string(0) }
                if let table = violations.first {
                    throw CoherenceError(.migrationFailed, "The migrated table \(table) has rows whose keys point nowhere.", store: path)
                }
                return result
            }
            connection.clearStatementCache()
            return result
        } catch let error as CoherenceError {
            connection.clearStatementCache()
            throw error
        } catch {
            connection.clearStatementCache()
            var e = CoherenceError(.migrationFailed, "The migration failed: \(error)", store: path, sql: (error as? SQLiteError)?.sql)
            if let sqlite = error as? SQLiteError { e.underlyingErrors = [sqlite] }
            throw e
        }
    }

    /// Test hook: called with the store's path and `create` just before a new file's schema is
    /// written, or `migrate` just before a migration's transaction begins.
    package static let openHook = LockedValue<(@Sendable (_ path: String, _ step: String) -> Void)?>(nil)

    /// The file changed between an opener's look and its write transaction (another opener made
    /// or migrated the store): the open starts over.
    private struct OpenRace: Error, CustomStringConvertible {
        var description: String { "another program made or migrated the store while this one opened it" }
    }

    /// Whether the file has Coherence's metadata table.
    private static func hasMetadataTable(_ connection: SQLiteConnection, _ generator: SQLGenerator) throws -> Bool {
        try connection.prepare(generator.metadataTableExists).rows { $0.int64(0) }.first ?? 0 > 0
    }

    /// The model version hash the file's metadata records now.
    private static func recordedModelHash(_ connection: SQLiteConnection) throws -> String? {
        var metadata: [String: String] = [:]
        for (k, v) in try connection.prepare(SQLGenerator(dialect: .sqlite).readMetadata).rows({ ($0.string(0), $0.string(1)) }) {
            metadata[k] = v
        }
        return metadata["modelVersionHash"]
    }

    /// Writes metadata entries (inside the caller's transaction).
    static func writeMetadata(_ entries: [String: String], _ connection: SQLiteConnection) throws {
        guard !entries.isEmpty else { return }
        let insert = try connection.prepare(SQLGenerator(dialect: .sqlite).writeMetadata)
        for (k, v) in entries.sorted(by: { $0.key < $1.key }) {
            insert.bind(k, at: 1)
            insert.bind(v, at: 2)
            try insert.execute()
        }
    }

    /// The metadata of the SQLite store at `url`, read without opening the store (the file is
    /// opened read-only and nothing is changed).
    /// - Throws: `.storeNotFound` (no file), `.storeOpenFailed` (not a SQLite database),
    ///   `.storeIncompatible` (a database without Coherence metadata).
    package static func metadata(at url: URL) throws(CoherenceError) -> [String: String] {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else {
            throw CoherenceError(.storeNotFound, "No store at this location.", store: path)
        }
        let generator = SQLGenerator(dialect: .sqlite)
        do {
            let connection = try SQLiteConnection(location: .file(path), readOnly: true, switchesToWAL: false)
            let hasMetadata = try connection.prepare(generator.metadataTableExists).rows { $0.int64(0) }.first ?? 0
            guard hasMetadata > 0 else {
                throw CoherenceError(.storeIncompatible, "The file is a SQLite database but not a Coherence store.", store: path)
            }
            if try CoreDataLayout.isCoreDataStore(connection) { return try CoreDataLayout.readMetadata(connection, path: path) }
            var metadata: [String: String] = [:]
            for (k, v) in try connection.prepare(generator.readMetadata).rows({ ($0.string(0), $0.string(1)) }) { metadata[k] = v }
            return metadata
        } catch let error as CoherenceError {
            throw error
        } catch {
            throw openError(error, path: path)
        }
    }

    /// The error of a connection that could not be opened: `.storeOpenFailed` while the store is
    /// being opened, `code` for a reader connection of an attached store.
    private static func openError(
        _ error: any Error, path: String,
        code: CoherenceError.Code = .storeOpenFailed
    ) -> CoherenceError {
        guard let e = error as? SQLiteError else {
            return CoherenceError(code, "Cannot open the store: \(error)", store: path)
        }
        let message: String
        switch e.resultCode {
        case SQLiteError.notADatabase: message = "The file is not a SQLite database (or is encrypted or corrupt)."
        case SQLiteError.corrupt: message = "The database file is corrupt."
        case SQLiteError.cannotOpen: message = "The file cannot be opened (missing directory or no permission)."
        case SQLiteError.readOnly: message = "The location is read-only."
        default: message = "SQLite could not open the store: \(e.message ?? "error \(e.resultCode)")."
        }
        var err = CoherenceError(code, message, store: path, sql: e.sql)
        err.underlyingErrors = [e]
        return err
    }

    deinit { close() }

    package func close() {
        // Idle readers close as the pool lets go of them; busy ones when their user returns them.
        readers.withLock { pool in
            pool.isClosed = true
            pool.idle.removeAll()
        }
        openSnapshots.detachAll()
        writer.close()
    }

    // MARK: Connections

    /// Runs `body` with a reader connection from the pool.
    func withReader<T>(_ body: (SQLiteConnection) throws -> T) throws(CoherenceError) -> T {
        let box = try takeReader()
        defer { returnReader(box) }
        guard let connection = box.connection else {
            throw CoherenceError(.storeNotAttached, "The store has been closed.", store: path)
        }
        if let trace = readerTrace.withLock({ $0 }) {
            connection.traceHandler = trace
        } else if connection.traceHandler != nil {
            connection.traceHandler = nil
        }
        return try readingStore { () throws -> T in try body(connection) }
    }

    /// A reader connection: an idle one of the pool, or a new one.
    func takeReader() throws(CoherenceError) -> ConnectionBox {
        let taken = readers.withLock { pool -> (ConnectionBox?, Bool) in
            if pool.isClosed { return (nil, true) }
            return (pool.idle.popLast(), false)
        }
        if taken.1 {
            throw CoherenceError(.storeNotAttached, "The store has been closed.", store: path)
        }
        if let b = taken.0 { return b }
        do {
            let c = try SQLiteConnection(
                location: .file(path), switchesToWAL: journalMode == "wal", synchronous: synchronous.connectionSetting,
                functions: SQLFunctions.register)
            try c.execute("PRAGMA query_only=1")
            return ConnectionBox(c)
        } catch {
            throw Self.openError(error, path: path, code: .storeReadFailed)
        }
    }

    /// Whether the store was closed (its pool takes no connections).
    var readersClosed: Bool { readers.withLock { $0.isClosed } }

    /// Puts a reader connection back in the pool (when it has room and the store is open).
    func returnReader(_ box: ConnectionBox) {
        readers.withLock { pool in
            if !pool.isClosed && pool.idle.count < 4 { pool.idle.append(box) }
        }
    }

    /// Runs a read, reporting its failure as `.storeReadFailed` (a `CoherenceError` as it is).
    func readingStore<T>(_ body: () throws -> T) throws(CoherenceError) -> T {
        do {
            return try body()
        } catch let error as CoherenceError {
            throw error
        } catch {
            throw storeError(.storeReadFailed, error, "Reading the store failed")
        }
    }

    package func writerConnectionForSave() throws(CoherenceError) -> SQLiteConnection {
        guard let c = writer.connection else {
            throw CoherenceError(.storeNotAttached, "The store has been closed.", store: path)
        }
        return c
    }

    /// A read or write of the attached store that failed, as `code` (`.storeReadFailed` or
    /// `.storeWriteFailed`), with the store's path, the SQL that failed and the SQLite error
    /// in `underlyingErrors`. A `CoherenceError` is returned as it is.
    func storeError(_ code: CoherenceError.Code, _ error: any Error, _ what: String) -> CoherenceError {
        if let e = error as? CoherenceError { return e }
        let sql = (error as? SQLiteError)?.sql
        var e = CoherenceError(code, "\(what): \(error)", store: path, sql: sql)
        e.underlyingErrors = [error as? SQLiteError ?? SQLiteError(extendedResultCode: SQLITE_ERROR, message: "\(error)")]
        return e
    }

    /// Test hook: the writer connection's SQL trace.
    package func setWriterTrace(_ handler: ((String) -> Void)?) {
        writer.connection?.traceHandler = handler
    }

    /// Test hook: an integer `PRAGMA` as the writer connection and a reader connection see it.
    package func pragmaValues(_ name: String) throws(CoherenceError) -> (writer: Int64, reader: Int64) {
        let sql = "PRAGMA \(name)"
        let writer: Int64
        do {
            writer = try writerConnectionForSave().prepare(sql).rows { $0.int64(0) }.first ?? -1
        } catch {
            throw storeError(.storeReadFailed, error, "Reading \(sql) failed")
        }
        let reader = try withReader { try $0.prepare(sql).rows { $0.int64(0) }.first ?? -1 }
        return (writer, reader)
    }

    /// Test hook: the SQL trace of reader connections (installed on each as it is used).
    package func setReaderTrace(_ handler: (@Sendable (String) -> Void)?) {
        readerTrace.withLock { $0 = handler }
    }

    // MARK: Reads

    func plan(for entity: EntityDescription) -> SelectPlan {
        let key = ObjectIdentifier(entity)
        if let p = plans.withLock({ $0[key] }) { return p }
        let p = generator.selectPlan(for: entity)
        plans.withLock { $0[key] = p }
        return p
    }

    /// The layout of the last entity a row reader saw: consecutive rows are almost always of
    /// the same entity, so this saves two dictionary lookups per row.
    private struct RowLayout {
        var number = -1
        var entity: EntityDescription?
        /// The result column of each slot, or -1 for a slot that takes its initial value.
        var columnBySlot: [Int32] = []
        var initialValues: [StoredValue] = []

        init() {}

        init(number: Int, entity: EntityDescription, mapping: [(column: Int32, slot: Int)]) {
            self.number = number
            self.entity = entity
            let initial = entity.initialValues
            var columns = [Int32](repeating: -1, count: initial.count)
            for (column, slot) in mapping where slot >= 0 && slot < columns.count { columns[slot] = column }
            self.columnBySlot = columns
            self.initialValues = initial
        }
    }

    /// The layout of the rows of entity number `number` of `plan` (`primaryKey`: the row's, for
    /// the error when the number is not in the plan's hierarchy).
    private func rowLayout(_ number: Int, plan: SelectPlan, primaryKey: Int64) throws(CoherenceError) -> RowLayout {
        guard let entity = plan.entities[number], let mapping = plan.mapping[number] else {
            throw notInHierarchy(number, primaryKey: primaryKey)
        }
        return RowLayout(number: number, entity: entity, mapping: mapping)
    }

    /// The error for a row whose entity number is not in the fetch's hierarchy.
    private func notInHierarchy(_ number: Int, primaryKey: Int64) -> CoherenceError {
        CoherenceError(.corruptRow, "Row \(primaryKey) has entity number \(number), which is not in this hierarchy.", store: path)
    }

    /// The values of the current row of `reader`'s statement: each slot written once, from its
    /// column (`columns`, -1: none) or its initial value, into an array made at its final size.
    /// No copy of the initial values to overwrite (which cost an array copy per row). Made from
    /// a collection of known count, the array is allocated by specialized code, once, and filled
    /// without a capacity check per value; an empty array's `reserveCapacity` also releases the
    /// empty buffer and checks each append, and `init(unsafeUninitializedCapacity:)` and
    /// `init(repeating:count:)` go through the standard library's unspecialized allocation,
    /// which looks the storage class's metadata up on every call. The arrays are borrowed and
    /// the reader holds no reference: nothing is counted per row.
    @inline(__always)
    private static func rowValues(_ reader: ColumnReader, columns: [Int32], initial: [StoredValue]) -> [StoredValue] {
        columns.withUnsafeBufferPointer { columns in
            initial.withUnsafeBufferPointer { initial in
                [StoredValue](
                    columns.indices.lazy.map { slot in
                        let column = columns[slot]
                        return column >= 0 ? reader.value(column) : initial[slot]
                    })
            }
        }
    }

    /// Reads the current row of a statement positioned on a row.
    @inline(__always)
    private func readRow(_ st: SQLiteStatement, plan: SelectPlan, layout: inout RowLayout) throws(CoherenceError) -> StoreRow {
        try readRow(st, plan: plan, layout: &layout) { entity, pk, version, values in
            StoreRow(entity: entity, primaryKey: pk, version: version, values: values)
        }
    }

    /// Reads the current row of a statement positioned on a row, and makes it with `make`
    /// (from the row's entity, key, version and values).
    @inline(__always)
    private func readRow<Row>(
        _ st: SQLiteStatement, plan: SelectPlan, layout: inout RowLayout,
        make: (EntityDescription, Int64, Int64, consuming [StoredValue]) -> Row
    ) throws(CoherenceError) -> Row {
        let pk = st.int64(0)
        let number = plan.singleEntityNumber ?? Int(st.int64(1))
        if layout.number != number { layout = try rowLayout(number, plan: plan, primaryKey: pk) }
        guard let entity = layout.entity else { throw notInHierarchy(number, primaryKey: pk) }
        assert(layout.columnBySlot.allSatisfy { $0 < st.columnCount }, "The plan's columns are the SELECT's.")
        let values = Self.rowValues(st.columns, columns: layout.columnBySlot, initial: layout.initialValues)
        return make(entity, pk, st.int64(2), values)
    }

    package func fetch(_ fetch: StoreFetch) throws(CoherenceError) -> [StoreRow] {
        let plan = self.plan(for: fetch.entity)
        let (sql, bindings) = try generator.select(fetch, plan: plan, storeIdentifier: identifier)
        return try withReader(fetch.generation?.snapshot(of: identifier)) { c in
            let st = try c.cachedStatement(sql)
            defer { st.reset() }
            st.bind(bindings)
            var rows: [StoreRow] = []
            // (A limit is a bound, not a count: a huge one must not reserve memory for itself.)
            if let limit = fetch.limit { rows.reserveCapacity(min(limit, 1 << 16)) }
            var layout = RowLayout()
            while try st.step() {
                rows.append(try readRow(st, plan: plan, layout: &layout))
            }
            return rows
        }
    }

    /// Expects the smaller of the row counts of the statement's last two runs (after one run,
    /// its count; see ``SQLiteStatement/expectedRowCount``), at most the fetch's limit. Before
    /// the statement's first complete run, a fetch of every row of a table expects the table's
    /// largest key (see ``firstRunEstimate(_:on:)``); others expect nothing.
    package func fetch(
        _ fetch: StoreFetch, expecting expect: (Int) -> Void,
        each body: RowReceiver
    ) throws(CoherenceError) {
        let plan = self.plan(for: fetch.entity)
        let (sql, bindings) = try generator.select(fetch, plan: plan, storeIdentifier: identifier)
        try withReader(fetch.generation?.snapshot(of: identifier)) { c in
            let st = try c.cachedStatement(sql)
            defer { st.reset() }
            st.bind(bindings)
            // The limit is a bound value: runs with other limits share the statement.
            let expected = st.hasRecordedRuns ? st.expectedRowCount : firstRunEstimate(fetch, on: c)
            expect(min(expected, fetch.limit ?? .max))
            var ids = ObjectID.RowIDs(storeIdentifier: identifier)
            var count = 0
            // Rows come in runs of one entity (every row, when the fetch has one). Each run reads
            // its entity's layout into constants once, so that filling a row's values borrows the
            // layout's arrays instead of retaining and releasing them per row.
            var more = try st.step()
            while more {
                let number = plan.singleEntityNumber ?? Int(st.int64(1))
                let layout = try rowLayout(number, plan: plan, primaryKey: st.int64(0))
                // (Never nil: a layout made from a plan has its entity.)
                guard let entity = layout.entity else { throw notInHierarchy(number, primaryKey: st.int64(0)) }
                let columns = layout.columnBySlot, initial = layout.initialValues
                assert(columns.allSatisfy { $0 < st.columnCount }, "The plan's columns are the SELECT's.")
                let reader = st.columns  // (`st` stays in use after the loop)
                repeat {
                    let values = Self.rowValues(reader, columns: columns, initial: initial)
                    body(ids.next(entity: entity, primaryKey: st.int64(0)), st.int64(2), values)
                    count &+= 1
                    more = try st.step()
                } while more && (plan.singleEntityNumber != nil || Int(st.int64(1)) == number)
            }
            st.noteRowCount(count)
        }
    }

    /// The rows a statement's first run of `fetch` is likely to return, read on `c`: for a fetch
    /// of every row of its entity's table (no predicate, no offset, no other entity's rows), the
    /// table's largest key, which one index lookup finds (keys are never reused, so it is at
    /// least the number of rows, and equal to it until rows are deleted); 0 (no estimate)
    /// otherwise, and when the lookup fails. Without it, the first run of a fetch of a whole
    /// table grows the receiver's tables row by row (the identity map moves every entry at each
    /// growth); a receiver that reserved too much gives it back once it knows the count.
    private func firstRunEstimate(_ fetch: StoreFetch, on c: SQLiteConnection) -> Int {
        guard fetch.predicate == nil, fetch.offset == 0,
            generator.entityRestriction(fetch.entity, includesSubentities: fetch.includesSubentities, alias: "t0") == nil
        else { return 0 }
        do {
            let st = try c.cachedStatement("SELECT max(Z_PK) FROM \(generator.table(fetch.entity))")
            defer { st.reset() }
            guard try st.step() else { return 0 }
            return Int(clamping: max(st.int64(0), 0))
        } catch {
            return 0
        }
    }

    package func fetchKeys(_ fetch: StoreFetch) throws(CoherenceError) -> [(primaryKey: Int64, entityNumber: Int)] {
        let (sql, bindings) = try generator.select(fetch, plan: nil, storeIdentifier: identifier)
        return try withReader(fetch.generation?.snapshot(of: identifier)) { c in
            let st = try c.cachedStatement(sql)
            defer { st.reset() }
            st.bind(bindings)
            var keys: [(primaryKey: Int64, entityNumber: Int)] = []
            while try st.step() { keys.append((st.int64(0), Int(st.int64(1)))) }
            return keys
        }
    }

    package func count(_ fetch: StoreFetch) throws(CoherenceError) -> Int {
        var f = fetch
        f.sortKeys = []
        let limit = f.limit, offset = f.offset
        f.limit = nil
        f.offset = 0
        let (sql, bindings) = try generator.select(f, plan: nil, storeIdentifier: identifier, count: true)
        let total = try withReader(fetch.generation?.snapshot(of: identifier)) { c -> Int in
            let st = try c.cachedStatement(sql)
            defer { st.reset() }
            st.bind(bindings)
            return try st.step() ? Int(st.int64(0)) : 0
        }
        let afterOffset = max(0, total - offset)
        return limit.map { min($0, afterOffset) } ?? afterOffset
    }

    package func rows(of entity: EntityDescription, keys: [Int64], in snapshot: (any StoreSnapshot)?) throws(CoherenceError) -> [StoreRow] {
        guard !keys.isEmpty else { return [] }
        return try withReader(snapshot) { c in try readRows(of: entity, keys: keys, on: c) }
    }

    /// Rows of `entity` (and its sub-entities) by primary key, read on connection `c`.
    func readRows(of entity: EntityDescription, keys: [Int64], on c: SQLiteConnection) throws -> [StoreRow] {
        let plan = self.plan(for: entity.rootEntity)
        let sql = generator.selectByKeys(entity, plan: plan)
        let list = "[" + keys.map(String.init).joined(separator: ",") + "]"
        let st = try c.cachedStatement(sql)
        defer { st.reset() }
        st.bind(list, at: 1)
        var rows: [StoreRow] = []
        rows.reserveCapacity(keys.count)
        var layout = RowLayout()
        while try st.step() { rows.append(try readRow(st, plan: plan, layout: &layout)) }
        return rows
    }

    package func related(
        _ relationship: RelationshipDescription, sources: [Int64], in snapshot: (any StoreSnapshot)?
    ) throws(CoherenceError) -> RelatedKeys {
        guard !sources.isEmpty else { return [:] }
        guard let sql = generator.selectRelated(relationship) else {
            throw CoherenceError(.invalidRequest, "Relationship '\(relationship.name)' is not stored.", property: relationship.name)
        }
        let list = "[" + sources.map(String.init).joined(separator: ",") + "]"
        return try withReader(snapshot) { c in
            let st = try c.cachedStatement(sql)
            defer { st.reset() }
            st.bind(list, at: 1)
            var result: RelatedKeys = [:]
            while try st.step() {
                result[st.int64(0), default: []].append((st.int64(1), Int(st.int64(2))))
            }
            return result
        }
    }

    package func allocateKeys(for entity: EntityDescription, count: Int) throws(CoherenceError) -> Int64 {
        let c = try writerConnectionForSave()
        do {
            if c.isInTransaction { return try allocateInSave(c, entity.rootEntity, count) }
            return try c.writeTransaction { try allocate(c, entity.rootEntity, count) }
        } catch {
            throw storeError(.storeWriteFailed, error, "Allocating primary keys failed")
        }
    }

    /// Allocates keys inside a save's transaction, from the reserved block when it has room.
    private func allocateInSave(_ c: SQLiteConnection, _ root: EntityDescription, _ count: Int) throws -> Int64 {
        let key = ObjectIdentifier(root)
        if let first = keyBlocks.withLock({ blocks -> Int64? in
            guard let b = blocks[key], b.end - b.next >= Int64(count) else { return nil }
            blocks[key] = (b.next + Int64(count), b.end)
            return b.next
        }) {
            return first
        }
        // A store made by Core Data reserves no more than it uses: Z_MAX stays the largest key.
        let reserve = generator.naming.isCoreData ? count : max(count, Self.keyBlockSize)
        let first = try allocate(c, root, reserve)
        keyBlocks.withLock { $0[key] = (first + Int64(count), first + Int64(reserve)) }
        return first
    }

    /// Forgets reserved keys (their reservation was rolled back).
    func forgetReservedKeys() {
        keyBlocks.withLock { $0.removeAll() }
    }

    private func allocate(_ c: SQLiteConnection, _ root: EntityDescription, _ count: Int) throws -> Int64 {
        let st = try c.cachedStatement(generator.allocatePrimaryKeys(root))
        defer { st.reset() }
        st.bind(Int64(count), at: 1)
        st.bind(Int64(generator.storedNumber(root)), at: 2)
        guard try st.step() else {
            throw CoherenceError(.corruptRow, "No primary-key counter for entity '\(root.name)'.", entity: root.name, store: path)
        }
        // Past the largest integer SQLite continues in floating point: the keys ran out (a
        // counter or key another program set near the limit). The last key is kept unused so
        // that the end of a reserved block stays an integer.
        guard case .integer(let last) = st.value(0), last < Int64.max else {
            throw CoherenceError(
                .storeWriteFailed,
                "Entity '\(root.name)' has no primary keys left: reserving \(count) would pass the largest integer "
                    + "(Z_PRIMARYKEY.Z_MAX, or a key in its table, is near it).", entity: root.name, store: path)
        }
        return last - Int64(count) + 1
    }
}

/// A connection shared between the store and the thread using it.
final class ConnectionBox: @unchecked Sendable {
    // @unchecked Sendable: a reader connection is used only by the thread that took it out of the
    // pool (under the pool's lock); the writer only under the coordinator's save lock.
    private(set) var connection: SQLiteConnection?
    init(_ connection: SQLiteConnection) { self.connection = connection }
    func close() { connection = nil }
}
