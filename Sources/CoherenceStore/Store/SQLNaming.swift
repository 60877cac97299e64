import Foundation

/// How a store names its tables, columns and entity numbers, carried by ``SQLGenerator``.
///
/// Coherence's own layout (``coherence``) names a table after its root entity and a column
/// after its property, and stores the model's entity numbers. A store made by Apple's Core Data
/// has names and numbers of its own (`ZSTUDENT`, `ZNAME`, `Z_1TAGS`, the `Z_ENT` numbers of
/// `Z_PRIMARYKEY`), which ``CoreDataLayout`` reads from the file and records here; every name
/// the generator writes into SQL goes through this value.
package struct SQLNaming: Sendable, Codable {
    /// A join table and its two key columns: `first` holds the keys of the side whose
    /// relationship is first (``RelationshipStorage/joinTable(name:sourceIsFirst:)``'s
    /// `sourceIsFirst`), `second` the other side's.
    package struct JoinTable: Sendable, Equatable, Codable {
        package var table: String
        package var first: String
        package var second: String
    }

    /// Whether the store has Core Data's layout.
    package var isCoreData = false
    /// Table by root entity name.
    package var tables: [String: String] = [:]
    /// Column by property, keyed `Entity.property` with the declaring entity.
    package var columns: [String: String] = [:]
    /// The stored entity number (`Z_ENT`) by model entity number.
    package var storedNumbers: [Int: Int] = [:]
    /// Join tables by the model's join-table name.
    package var joinTables: [String: JoinTable] = [:]
    /// Statements that keep columns the model does not use up to date, run at the end of a save
    /// that wrote rows of one of their hierarchies (`roots`, by root entity name), and of every
    /// batch request: the entity column of a to-one relationship (`Z3_OWNER`) and the second
    /// foreign key of a one-to-one relationship, which Core Data stores on both sides.
    package var upkeep: [(sql: String, roots: Set<String>)] = []

    /// What a store records of its names (``json``): tables, columns and join tables.
    enum CodingKeys: String, CodingKey {
        case tables, columns, joinTables
    }

    /// The names as recorded in a store's metadata.
    package var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Names read back from a store's metadata (nil when missing or unreadable).
    package init?(json: String?) {
        guard let json, let decoded = try? JSONDecoder().decode(SQLNaming.self, from: Data(json.utf8)) else { return nil }
        self = decoded
        isCoreData = true
    }

    /// Names to fill in.
    package init() {}

    /// Coherence's own layout: names are the model's.
    package static let coherence = SQLNaming()

    /// The key of a property in ``columns``.
    package static func key(_ property: PropertyDescription) -> String {
        (property.entity?.name ?? "") + "." + property.name
    }

    /// The table name of a root entity (unquoted).
    package func tableName(_ root: EntityDescription) -> String {
        isCoreData ? tables[root.name] ?? root.name : root.name
    }

    /// The column name of a stored property (unquoted).
    package func columnName(_ property: PropertyDescription) -> String {
        isCoreData ? columns[Self.key(property)] ?? property.name : property.name
    }

    /// The number stored in `Z_ENT` (and `Z_PRIMARYKEY`) for an entity.
    package func storedNumber(_ entity: EntityDescription) -> Int {
        storedNumber(entity.entityNumber)
    }

    /// The number stored for a model entity number.
    package func storedNumber(_ modelNumber: Int) -> Int {
        isCoreData ? storedNumbers[modelNumber] ?? modelNumber : modelNumber
    }

    /// Whether stored entity numbers differ from the model's.
    var translatesNumbers: Bool { isCoreData && storedNumbers.contains { $0.key != $0.value } }
}
