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
        let recorded = metadata["modelVersionHash"]
        if let recorded, recorded != expectedHash {
            let why =
                migratesAutomatically
                ? " It records no schema to migrate from."
                : " Automatic migration is off (StoreOptions.migratesAutomatically)."
            throw CoherenceError(
                .storeIncompatible,
                "The store was made for another model (store model hash \(recorded), this model's \(expectedHash)).\(why)",
                store: path)
        }
        let naming = try CoreDataLayout.naming(for: entities, connection, path: path)
        try switchJournal()
        var version: [String: String] = [:]
        if recorded == nil {
            version = versionMetadata(entities: entities, model: model, naming: naming)
            version["modelVersionHash"] = expectedHash
        }
        if (historyTracking && !hasHistory) || !version.isEmpty {
            let entries = version
            try connection.writeTransaction {
                if historyTracking && !hasHistory { try createHistoryTables(connection) }
                try CoreDataLayout.writeMetadata(entries, connection, path: path)
            }
            metadata.merge(version) { _, new in new }
        }
        return (metadata, naming)
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
        return version
    }
}
