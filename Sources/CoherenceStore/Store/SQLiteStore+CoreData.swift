import Foundation

extension SQLiteStore {
    /// Opens a store made by Apple's Core Data (``CoreDataLayout``): maps `entities` onto its
    /// tables and records the model's version in its property list the first time.
    /// - Returns: the store's metadata and names.
    /// - Throws: `.storeLayoutMismatch` (tables or columns that do not fit the model),
    ///   `.storeIncompatible`, `.historyTrackingRequired`; the store is left as it was.
    static func openCoreDataStore(
        _ connection: SQLiteConnection, entities: [EntityDescription], model: ManagedObjectModel, path: String,
        expectedHash: String, historyTracking: Bool, migratesAutomatically: Bool,
        switchJournal: () throws(SQLiteError) -> Void
    ) throws -> (metadata: [String: String], naming: SQLNaming) {
        var metadata = try CoreDataLayout.readMetadata(connection, path: path)
        guard let uuid = metadata["storeUUID"], UUID(uuidString: uuid) != nil else {
            throw CoherenceError(.storeIncompatible, "The store's Z_METADATA has no valid Z_UUID.", store: path)
        }
        let hasHistory = try hasHistoryTables(connection)
        if hasHistory && !historyTracking {
            throw CoherenceError(
                .historyTrackingRequired,
                "The store records persistent history; open it with StoreOptions.persistentHistoryTracking on (it was left as it was).",
                store: path)
        }
        var recorded = metadata["modelVersionHash"]
        if let stored = recorded, stored != expectedHash {
            let oldSchema = StoredSchema(json: metadata["schema"])
            let oldNaming = SQLNaming(json: metadata["naming"])
            guard migratesAutomatically, let oldSchema, let oldNaming else {
                let why =
                    migratesAutomatically
                    ? " It records no schema to migrate from."
                    : " Automatic migration is off (StoreOptions.migratesAutomatically)."
                throw CoherenceError(
                    .storeIncompatible,
                    "The store was made for another model (store model hash \(stored), this model's \(expectedHash)).\(why)",
                    store: path)
            }
            let migration = try InferredMigration(old: oldSchema, entities: entities, model: model, store: path)
            var version: [String: String] = [:]
            try migrate(connection, path: path) {
                // Core Data's names become the model's for the inferred migration, then the new
                // model's tables and columns take Core Data's names again.
                try CoreDataLayout.useModelNames(oldNaming, schema: oldSchema, connection)
                try migration.run(on: connection)
                try CoreDataLayout.useCoreDataNames(entities, connection)
                let naming = try CoreDataLayout.naming(for: entities, connection, path: path)
                for (sql, _) in naming.upkeep { try connection.execute(sql) }
                version = versionMetadata(entities: entities, model: model, naming: naming)
                version["modelVersionHash"] = expectedHash
                try CoreDataLayout.writeMetadata(
                    version, removing: model.versionIdentifier == nil ? ["versionIdentifier"] : [], connection, path: path)
            }
            metadata["versionIdentifier"] = nil
            metadata.merge(version) { _, new in new }
            recorded = expectedHash
        }
        let naming = try CoreDataLayout.naming(for: entities, connection, path: path)
        try switchJournal()
        var version: [String: String] = [:]
        if recorded == nil {
            version = versionMetadata(entities: entities, model: model, naming: naming)
            version["modelVersionHash"] = expectedHash
        }
        // A unique index of the model's uniqueness constraints that the store lacks is made, as
        // in a store of Coherence's layout (see StoreLayoutRepair): uniqueness conflicts are found
        // through it.
        let database = SQLiteMigrationDatabase(connection)
        let indexGenerator = SQLGenerator(dialect: .sqlite, naming: naming)
        let lacksUniqueIndexes = try !StoreLayoutRepair.missingUniqueIndexes(
            on: database, entities: entities, generator: indexGenerator
        ).isEmpty
        if (historyTracking && !hasHistory) || !version.isEmpty || lacksUniqueIndexes {
            let entries = version
            try connection.writeTransaction {
                if historyTracking && !hasHistory { try createHistoryTables(connection) }
                if lacksUniqueIndexes {
                    try StoreLayoutRepair.addMissingUniqueIndexes(on: database, entities: entities, generator: indexGenerator, store: path)
                }
                if (historyTracking && !hasHistory) || !entries.isEmpty {
                    try CoreDataLayout.writeMetadata(entries, connection, path: path)
                }
            }
            metadata.merge(version) { _, new in new }
        }
        return (metadata, naming)
    }

    /// Brings the columns of a store made by Core Data that the model does not write (a
    /// to-one's entity column, the second side of a one-to-one) up to date, at the end of a save
    /// (those of the hierarchies `changes` wrote) or a batch request (all), inside its
    /// transaction. Each statement reads its whole table.
    func keepCoreDataColumns(_ c: SQLiteConnection, after changes: StoreChangeSet? = nil) throws {
        let upkeep = generator.naming.upkeep
        guard !upkeep.isEmpty else { return }
        var written: Set<String>?
        if let changes {
            written = Set(
                changes.inserts.map(\.objectID.entity.rootEntity.name) + changes.updates.map(\.objectID.entity.rootEntity.name)
                    + changes.deletes.map(\.objectID.entity.rootEntity.name))
        }
        for (sql, roots) in upkeep where written.map({ !$0.isDisjoint(with: roots) }) ?? true {
            try c.cachedStatement(sql).execute()
        }
    }

    /// The version metadata of a store made by Core Data: as a Coherence store's, with the
    /// entity numbers the store uses in its schema.
    static func versionMetadata(entities: [EntityDescription], model: ManagedObjectModel, naming: SQLNaming) -> [String: String] {
        var version = StoredSchema.versionMetadata(entities: entities, model: model)
        var schema = StoredSchema(entities: entities, model: model)
        let numbers = Dictionary(entities.map { ($0.name, naming.storedNumber($0)) }, uniquingKeysWith: { a, _ in a })
        for i in schema.entities.indices {
            schema.entities[i].number = numbers[schema.entities[i].name] ?? schema.entities[i].number
        }
        version["schema"] = schema.json
        version["naming"] = naming.json
        return version
    }
}
