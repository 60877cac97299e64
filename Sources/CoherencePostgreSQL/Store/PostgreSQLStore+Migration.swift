import Foundation

/// Migrations of a PostgreSQL store. An inferred migration runs inside the transaction that
/// opens the store (PostgreSQL's DDL is transactional: renamed, made and dropped tables, copied
/// rows and the new metadata commit together or not at all, and a client that dies mid-way
/// leaves the old version). A staged migration works on a copy of the schema
/// (``PostgreSQLMigrationCopy``).
extension PostgreSQLStore {
    /// Migrates the store on `c` (inside its open transaction, under the opening lock) from the
    /// version its metadata records to `model`'s, and updates `metadata`.
    /// - Throws: `.storeIncompatible` (automatic migration off, or no schema recorded),
    ///   `.migrationNotInferable`, `.migrationMissingValues`, `.migrationUniquenessViolated`,
    ///   `.migrationFailed` (the server refused a step; the caller rolls back).
    static func migrate(
        _ c: PostgreSQLConnection, metadata: inout [String: String], entities: [EntityDescription], model: ManagedObjectModel,
        expectedHash: String, options: StoreOptions, store: String
    ) throws(CoherenceError) {
        guard options.migratesAutomatically && options.infersMappingModelAutomatically, let old = StoredSchema(json: metadata["schema"])
        else {
            let why =
                options.migratesAutomatically && options.infersMappingModelAutomatically
                ? " It records no schema to migrate from." : " Automatic migration is off (StoreOptions.migratesAutomatically)."
            throw CoherenceError(
                .storeIncompatible,
                "The store was made for another model (store model hash \(metadata["modelVersionHash"] ?? "none"), this model's \(expectedHash)).\(why)",
                store: store)
        }
        let migration = try InferredMigration(old: old, entities: entities, model: model, store: store, dialect: .postgreSQL)
        let generator = SQLGenerator(dialect: .postgreSQL)
        let database = PostgreSQLMigrationDatabase(connection: c)
        var updated = StoredSchema.versionMetadata(entities: entities, model: model)
        updated["modelVersionHash"] = expectedHash
        do {
            try migration.run(on: database)
            if model.versionIdentifier == nil { try database.execute(generator.deleteMetadata, [.text("versionIdentifier")]) }
            for (k, v) in updated.sorted(by: { $0.key < $1.key }) { try database.execute(generator.writeMetadata, [.text(k), .text(v)]) }
        } catch let error as CoherenceError {
            throw error
        } catch {
            throw migrationError("The migration failed", error, store: store)
        }
        // The statements prepared for the migration are not needed again.
        c.clearStatementCache()
        metadata["versionIdentifier"] = nil
        metadata.merge(updated) { _, new in new }
    }

    /// `.migrationFailed` for a failure of the server or the connection, with the SQL and the
    /// PostgreSQL error in `underlyingErrors`; a `CoherenceError` is returned as it is.
    static func migrationError(_ what: String, _ error: any Error, store: String) -> CoherenceError {
        if let e = error as? CoherenceError { return e }
        let postgres = error as? PostgreSQLError
        var e = CoherenceError(.migrationFailed, "\(what): \(postgres?.message ?? "\(error)")", store: store, sql: postgres?.sql)
        e.underlyingErrors = [postgres ?? PostgreSQLError(message: "\(error)", location: store)]
        return e
    }
}

/// A PostgreSQL connection as a ``MigrationDatabase``: `?` placeholders become `$1`, `$2`, ….
struct PostgreSQLMigrationDatabase: MigrationDatabase {
    let connection: PostgreSQLConnection

    @discardableResult
    func execute(_ sql: String, _ parameters: [StoredValue]) throws -> Int {
        let numbered = SQLDialect.postgreSQL.numberingPlaceholders(sql)
        return parameters.isEmpty
            ? try connection.execute(numbered).affectedRows : try connection.execute(numbered, parameters).affectedRows
    }

    func rows(_ sql: String, _ parameters: [StoredValue]) throws -> [[StoredValue]] {
        let numbered = SQLDialect.postgreSQL.numberingPlaceholders(sql)
        return parameters.isEmpty ? try connection.execute(numbered).rows : try connection.execute(numbered, parameters).rows
    }
}

extension PostgreSQLStoreFactory {
    /// The metadata of the store in the URL's schema, read in a read-only transaction.
    /// - Throws: `.storeNotFound` (the schema holds no store), `.storeOpenFailed` (bad URL,
    ///   server unreachable), `.storeIncompatible` (tables that are not a Coherence store's).
    func metadata(at url: URL) throws(CoherenceError) -> [String: String] {
        let location = publicURL(for: url)?.absoluteString
        let generator = SQLGenerator(dialect: .postgreSQL)
        do {
            let connection = try PostgreSQLConnection(try PostgreSQLConfiguration(url: url))
            defer { connection.close() }
            try connection.execute("BEGIN READ ONLY")
            defer { _ = try? connection.execute("ROLLBACK") }
            guard (try connection.execute(generator.metadataTableExists).firstInteger ?? 0) > 0 else {
                if (try connection.execute(generator.userTableCount).firstInteger ?? 0) > 0 {
                    throw CoherenceError(.storeIncompatible, "The schema has tables but is not a Coherence store.", store: location)
                }
                throw CoherenceError(.storeNotFound, "The schema holds no store.", store: location)
            }
            var metadata: [String: String] = [:]
            for row in try connection.execute(generator.readMetadata).rows {
                if case .text(let k) = row[0], case .text(let v) = row[1] { metadata[k] = v }
            }
            return metadata
        } catch {
            throw PostgreSQLStore.error(.storeOpenFailed, error, "Cannot read the store's metadata", store: location)
        }
    }

    func makeMigrationCopy(of url: URL) throws(CoherenceError) -> any MigrationCopying {
        try PostgreSQLMigrationCopy(of: url)
    }
}
