import Foundation

/// A copy of a PostgreSQL store's schema that a staged migration works on (the SQLite store's
/// `MigrationCopy` is a copy of its file): `<schema>_migrating` in the same database, with the
/// store's tables, rows, keys, foreign keys, indexes and functions.
///
/// While the copy exists, a connection of its own holds a transaction that keeps other clients
/// from writing to the store (`LOCK TABLE … IN SHARE MODE`; they can still read), so that no
/// save is lost when the copy takes the store's place, and a session lock that keeps a second
/// migration of the store waiting. ``replaceOriginal()`` drops the store's schema and renames
/// the copy in that same transaction: other clients see the old version or the new one, never a
/// mixture. A client that dies before (killed, or its connection lost) leaves the store as it was:
/// the server rolls its transaction back and releases its locks; the copy it left is dropped by
/// the next migration.
final class PostgreSQLMigrationCopy: MigrationCopying, @unchecked Sendable {
    // @unchecked Sendable: used by the one thread running the migration.

    /// The copy's store URL (the store's, with the copy's schema).
    let url: URL
    private let schema: String
    private let copySchema: String
    private let location: String
    /// Holds the session lock and the transaction that keeps writers out.
    private var guardConnection: PostgreSQLConnection?
    private let generator = SQLGenerator(dialect: .postgreSQL)

    /// The copy's schema name for a store's schema (a shorter derived name when the suffix
    /// would pass PostgreSQL's 63-byte limit on names).
    static func copyName(of schema: String) -> String {
        let name = schema + "_migrating"
        guard name.utf8.count > 63 else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in schema.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return "z_migrating_" + String(hash, radix: 16)
    }

    /// Copies the store at `url`.
    /// - Throws: `.migrationFailed` naming the store when it cannot be copied.
    init(of original: URL) throws(CoherenceError) {
        let configuration: PostgreSQLConfiguration
        do {
            configuration = try PostgreSQLConfiguration(url: original)
        } catch {
            throw PostgreSQLStore.error(.storeOpenFailed, error, "The store URL is not valid", store: error.location)
        }
        schema = configuration.schema
        copySchema = Self.copyName(of: schema)
        location = configuration.redactedURL
        var components = URLComponents(url: original, resolvingAgainstBaseURL: false)
        var items = (components?.queryItems ?? []).filter { $0.name != "schema" }
        items.append(URLQueryItem(name: "schema", value: copySchema))
        components?.queryItems = items
        guard let copyURL = components?.url else {
            throw CoherenceError(.migrationFailed, "Cannot make the URL of the store's copy.", store: location)
        }
        url = copyURL
        let generator = self.generator
        let lockName = StoredValue.text("coherence-migration:" + schema)
        do {
            let guardConnection = try PostgreSQLConnection(configuration)
            self.guardConnection = guardConnection
            try guardConnection.execute(generator.dialect.numberingPlaceholders(generator.takeSessionLock), [lockName])
            // A copy left by a client that died.
            try guardConnection.execute(generator.dropSchema(copySchema))
            try guardConnection.execute("BEGIN")
            let tables = try Self.texts(guardConnection, generator.schemaTables, schema)
            if !tables.isEmpty { try guardConnection.execute(generator.lockAgainstWrites(tables, in: schema)) }

            let copier = try PostgreSQLConnection(configuration)
            defer { copier.close() }
            try copier.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            // Definitions read while the store's schema is the search path: its tables unqualified.
            let constraints = try copier.execute(generator.dialect.numberingPlaceholders(generator.schemaConstraints), [.text(schema)]).rows
            let indexes = try Self.texts(copier, generator.schemaIndexDefinitions, schema)
            try copier.execute(generator.createSchema(copySchema))
            for table in tables {
                for statement in generator.copyTable(table, from: schema, to: copySchema) { try copier.execute(statement) }
            }
            try copier.execute(generator.setLocalSearchPath(copySchema))
            for row in constraints {
                guard row.count == 3, case .text(let table) = row[0], case .text(let name) = row[1], case .text(let definition) = row[2]
                else { continue }
                try copier.execute(generator.addConstraint(name, to: table, definition: definition))
            }
            for statement in indexes + generator.createFunctions() { try copier.execute(statement) }
            try copier.execute("COMMIT")
        } catch {
            discard()
            throw PostgreSQLStore.migrationError("Cannot copy the store for its migration", error, store: location)
        }
    }

    deinit { discard() }

    private static func texts(_ c: PostgreSQLConnection, _ sql: String, _ schema: String) throws -> [String] {
        try c.execute(SQLDialect.postgreSQL.numberingPlaceholders(sql), [.text(schema)]).rows.compactMap { row in
            guard case .text(let text)? = row.first else { return nil }
            return text
        }
    }

    /// Drops the store's schema and renames the copy in its place, in the transaction that kept
    /// writers out; waits at most 10 seconds for other clients' transactions on the store (a
    /// pinned query generation holds one).
    /// - Throws: `.migrationFailed` (the store is left at its old version, the copy dropped).
    func replaceOriginal() throws(CoherenceError) {
        guard let c = guardConnection else {
            throw CoherenceError(.migrationFailed, "The store's copy is gone.", store: location)
        }
        do {
            try c.execute(generator.setLocalLockTimeout("10s"))
            try c.execute(generator.dropSchema(schema))
            try c.execute(generator.renameSchema(copySchema, to: schema))
            try c.execute("COMMIT")
        } catch {
            discard()
            let inUse = error.isTimeout
            throw PostgreSQLStore.migrationError(
                inUse
                    ? "The store is in use by another client's transaction; it was not migrated" : "Cannot put the migrated store in place",
                error, store: location)
        }
        release(c)
    }

    /// Drops the copy and lets writers and other migrations go on.
    func discard() {
        guard let c = guardConnection else { return }
        if c.isInTransaction { _ = try? c.execute("ROLLBACK") }
        _ = try? c.execute(generator.dropSchema(copySchema))
        release(c)
    }

    private func release(_ c: PostgreSQLConnection) {
        _ = try? c.execute(generator.dialect.numberingPlaceholders(generator.releaseSessionLock), [.text("coherence-migration:" + schema)])
        c.close()
        guardConnection = nil
    }
}
