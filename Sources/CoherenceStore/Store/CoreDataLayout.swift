import Foundation

/// A SQLite store written by Apple's Core Data: recognizing it, mapping a model onto its tables
/// (``SQLNaming``), and its metadata, a binary property list in `Z_METADATA`.
///
/// Core Data's rules, which the mapping follows:
/// - `Z_PRIMARYKEY` has a row per entity: `Z_ENT` (the entity's number, stored in every row's
///   `Z_ENT`), `Z_NAME`, `Z_SUPER` (the parent's number, 0 for a root) and `Z_MAX` (the largest
///   primary key handed out; a hierarchy's keys come from its root's row).
/// - An entity hierarchy is one table, `Z` + the root entity's name in capitals; its rows have
///   `Z_PK`, `Z_ENT` and `Z_OPT` (the row version, 1 when inserted and one more per update).
/// - An attribute or to-one relationship is the column `Z` + its name in capitals; when two
///   entities of a hierarchy have properties of the same name, the later ones (by entity
///   number) take `1`, `2`, … after it. A to-one relationship may have a second column,
///   `Z<number>_<NAME>`, with the destination row's entity number.
/// - A one-to-one relationship is stored on both sides.
/// - A many-to-many relationship (and a to-many without inverse) is a table
///   `Z_<n><RELATIONSHIP>`, where `n` is the number of the entity declaring the relationship
///   (of the two sides, the one whose table exists); the keys of an entity are in the column
///   `Z_<its number><the name of the relationship pointing to it>` (a `1` follows a name taken).
/// - Dates are seconds since 2001-01-01 (REAL, `TIMESTAMP` columns), Booleans INTEGER, UUIDs and
///   binary data BLOB, decimals `DECIMAL` columns (numbers), strings and URIs `VARCHAR`.
package enum CoreDataLayout {
    /// The prefix of the metadata keys Coherence keeps in the store's property list.
    static let keyPrefix = "Coherence."

    /// Whether the database has Core Data's metadata table (`Z_METADATA` with `Z_PLIST`).
    package static func isCoreDataStore(_ c: SQLiteConnection) throws -> Bool {
        try !c.prepare("SELECT 1 FROM pragma_table_info('Z_METADATA') WHERE name = 'Z_PLIST'").rows { $0.int64(0) }.isEmpty
    }

    // MARK: Metadata

    /// The store's metadata: the property list's text entries, Coherence's own entries (kept in
    /// the list with ``keyPrefix``), `storeUUID` (Core Data's `Z_UUID`) and `storeLayout`
    /// (`CoreData`).
    package static func readMetadata(_ c: SQLiteConnection, path: String) throws -> [String: String] {
        let (uuid, plist) = try readPropertyList(c, path: path)
        var result: [String: String] = [:]
        for (key, value) in plist {
            guard let text = value as? String else { continue }
            result[key.hasPrefix(keyPrefix) ? String(key.dropFirst(keyPrefix.count)) : key] = text
        }
        result["storeUUID"] = uuid
        result["storeLayout"] = "CoreData"
        return result
    }

    /// Writes metadata entries into the property list (Core Data's own entries are kept), and
    /// removes `removing`, inside the caller's transaction.
    package static func writeMetadata(_ entries: [String: String], removing: [String] = [], _ c: SQLiteConnection, path: String) throws {
        var (_, plist) = try readPropertyList(c, path: path)
        for (key, value) in entries where key != "storeUUID" && key != "storeLayout" { plist[keyPrefix + key] = value }
        for key in removing { plist[keyPrefix + key] = nil }
        let data: Data
        do {
            data = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        } catch {
            throw CoherenceError(.storeWriteFailed, "The store's metadata could not be written as a property list: \(error)", store: path)
        }
        let st = try c.prepare("UPDATE Z_METADATA SET Z_PLIST = ?")
        st.bind(data, at: 1)
        try st.execute()
    }

    /// Core Data's `Z_UUID` and the property list of `Z_PLIST`.
    private static func readPropertyList(_ c: SQLiteConnection, path: String) throws -> (String, [String: Any]) {
        let st = try c.prepare("SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1")
        guard try st.step() else {
            throw CoherenceError(.storeIncompatible, "The store made by Core Data has no row in Z_METADATA.", store: path)
        }
        let uuid = st.string(0)
        let data = st.data(1)
        if data.isEmpty { return (uuid, [:]) }
        let list = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        guard let dictionary = list as? [String: Any] else {
            throw CoherenceError(.storeIncompatible, "Z_METADATA.Z_PLIST is not a property list dictionary.", store: path)
        }
        return (uuid, dictionary)
    }

    // MARK: Migrating

    /// Renames the tables and columns of `naming` (a store's Core Data names, recorded with
    /// `schema`) to the names Coherence gives them, so that an ``InferredMigration`` from
    /// `schema` can run (inside the caller's transaction). Columns the model does not use
    /// (Core Data's second side of a one-to-one, entity columns) keep their names.
    static func useModelNames(_ naming: SQLNaming, schema: StoredSchema, _ c: SQLiteConnection) throws {
        let q = SQLDialect.sqlite.quote
        let byName = schema.entitiesByName
        for (root, table) in naming.tables.sorted(by: { $0.key < $1.key }) {
            try c.execute("ALTER TABLE \(q(table)) RENAME TO \(q(root))")
        }
        for e in schema.entities {
            let stored = e.attributes.map(\.name) + e.relationships.filter { $0.storage == "fk" }.map(\.name)
            for property in stored {
                guard let column = naming.columns[e.name + "." + property], let root = byName[e.name]?.root else { continue }
                try c.execute("ALTER TABLE \(q(root)) RENAME COLUMN \(q(column)) TO \(q(property))")
            }
        }
        for (name, join) in naming.joinTables.sorted(by: { $0.key < $1.key }) {
            try c.execute("ALTER TABLE \(q(join.table)) RENAME TO \(q(name))")
            try c.execute("ALTER TABLE \(q(name)) RENAME COLUMN \(q(join.first)) TO Z_1")
            try c.execute("ALTER TABLE \(q(name)) RENAME COLUMN \(q(join.second)) TO Z_2")
        }
    }

    /// Gives the tables and columns of `entities`, as Coherence made them, Core Data's names
    /// (see the rules above), numbering entities as the model does, and writes `Z_PRIMARYKEY`
    /// with every entity, its parent and the roots' counters (inside the caller's transaction).
    static func useCoreDataNames(_ entities: [EntityDescription], _ c: SQLiteConnection) throws {
        let q = SQLDialect.sqlite.quote
        for root in entities where root.superentity == nil {
            let table = "Z" + root.name.uppercased()
            try c.execute("ALTER TABLE \(q(root.name)) RENAME TO \(q(table))")
            var taken = Set<String>()
            for e in SQLGenerator.hierarchy(of: root).sorted(by: { $0.entityNumber < $1.entityNumber }) {
                for p in e.ownProperties where e.storedProperties.contains(where: { $0 === p }) {
                    let base = "Z" + p.name.uppercased()
                    let name = CoreDataLayout.unusedName(base, taken: taken)
                    taken.insert(name)
                    try c.execute("ALTER TABLE \(q(table)) RENAME COLUMN \(q(p.name)) TO \(q(name))")
                }
            }
            // The second side of each one-to-one, which Core Data stores too (filled by the
            // upkeep that follows the migration).
            let info = try c.prepare("SELECT name FROM pragma_table_info(?)")
            info.bind(table, at: 1)
            let existing = Set(try info.rows { $0.string(0) })
            for e in SQLGenerator.hierarchy(of: root) {
                for case let r as RelationshipDescription in e.ownProperties
                where !r.isTransient && !r.hasForeignKey && !r.isToMany && r.inverseRelationship?.isToMany == false {
                    let name = "Z" + r.name.uppercased()
                    guard !taken.contains(name), !existing.contains(name) else { continue }
                    taken.insert(name)
                    try c.execute("ALTER TABLE \(q(table)) ADD COLUMN \(q(name)) INTEGER")
                }
            }
        }
        for e in entities {
            for case let r as RelationshipDescription in e.ownProperties where !r.isTransient {
                guard case .joinTable(let name, true) = r.storage, let destination = r.destinationEntity else { continue }
                let inverse = r.inverseRelationship
                let source = e.entityNumber, target = (inverse?.entity ?? destination).entityNumber
                let first = "Z_\(source)\((inverse?.name ?? e.name).uppercased())"
                var second = "Z_\(target)\(r.name.uppercased())"
                if second == first { second += "1" }
                let table = "Z_\(source)\(r.name.uppercased())"
                try c.execute("ALTER TABLE \(q(name)) RENAME TO \(q(table))")
                try c.execute("ALTER TABLE \(q(table)) RENAME COLUMN Z_1 TO \(q(first))")
                try c.execute("ALTER TABLE \(q(table)) RENAME COLUMN Z_2 TO \(q(second))")
            }
        }
        let counters = Dictionary(
            try c.prepare("SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY").rows { (Int($0.int64(0)), $0.int64(1)) }, uniquingKeysWith: max)
        try c.execute("DELETE FROM Z_PRIMARYKEY")
        let insert = try c.prepare("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)")
        for e in entities {
            insert.bind(Int64(e.entityNumber), at: 1)
            insert.bind(e.name, at: 2)
            insert.bind(Int64(e.superentity?.entityNumber ?? 0), at: 3)
            insert.bind(e.superentity == nil ? counters[e.entityNumber] ?? 0 : 0, at: 4)
            try insert.execute()
            insert.reset()
        }
    }

    // MARK: Mapping

    /// Maps `entities` (whole hierarchies) onto the store's tables.
    /// - Throws: `.storeLayoutMismatch` naming the table or column that is missing or does not fit.
    package static func naming(for entities: [EntityDescription], _ c: SQLiteConnection, path: String) throws -> SQLNaming {
        var mapper = Mapper(connection: c, path: path)
        return try mapper.map(entities)
    }

    /// `base`, or when a property of the same hierarchy took it, `base` with the first of `1`,
    /// `2`, … that is free (Core Data's names for properties of the same name in one table).
    static func unusedName(_ base: String, taken: Set<String>) -> String {
        var name = base
        var suffix = 1
        while taken.contains(name) {
            name = base + String(suffix)
            suffix += 1
        }
        return name
    }

    /// Whether a column's declared type holds values of an attribute type.
    static func columnType(_ declared: String, holds type: AttributeType) -> Bool {
        let d = declared.uppercased()
        if d.isEmpty { return true }
        switch type.kind {
        case .integer16, .integer32, .integer64, .boolean: return d.contains("INT")
        case .double, .float: return d.contains("FLOAT") || d.contains("REAL") || d.contains("DOUB")
        case .date: return d.contains("TIMESTAMP") || d.contains("REAL") || d.contains("FLOAT") || d.contains("DATE")
        case .string, .uri: return d.contains("CHAR") || d.contains("TEXT") || d.contains("CLOB")
        case .decimal: return d.contains("DECIMAL") || d.contains("NUMERIC") || d.contains("TEXT")
        case .binaryData, .uuid, .transformable: return d.contains("BLOB")
        }
    }

    private struct Mapper {
        let connection: SQLiteConnection
        let path: String
        var columnsByTable: [String: [String: String]?] = [:]
        var naming = SQLNaming()
        /// Stored numbers and parents by entity name, from `Z_PRIMARYKEY`.
        var rows: [String: (number: Int, parent: Int)] = [:]

        init(connection: SQLiteConnection, path: String) {
            self.connection = connection
            self.path = path
            naming.isCoreData = true
        }

        func mismatch(_ message: String, entity: String? = nil, property: String? = nil) -> CoherenceError {
            CoherenceError(.storeLayoutMismatch, message, entity: entity, property: property, store: path)
        }

        /// The columns of a table with their declared types, or nil when there is no such table.
        mutating func columns(of table: String) throws -> [String: String]? {
            if let known = columnsByTable[table] { return known }
            let st = try connection.prepare("SELECT name, type FROM pragma_table_info(?)")
            st.bind(table, at: 1)
            let found = try st.rows { ($0.string(0), $0.string(1)) }
            let result = found.isEmpty ? nil : Dictionary(found, uniquingKeysWith: { a, _ in a })
            columnsByTable[table] = result
            return result
        }

        mutating func map(_ entities: [EntityDescription]) throws -> SQLNaming {
            guard try columns(of: "Z_PRIMARYKEY")?["Z_SUPER"] != nil else {
                throw mismatch("The store has no table Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX).")
            }
            let keys = try connection.prepare("SELECT Z_ENT, Z_NAME, coalesce(Z_SUPER, 0) FROM Z_PRIMARYKEY")
            for (number, name, parent) in try keys.rows({ (Int($0.int64(0)), $0.string(1), Int($0.int64(2))) }) {
                rows[name] = (number, parent)
            }
            for e in entities {
                guard let row = rows[e.name] else {
                    throw mismatch("Z_PRIMARYKEY has no entity named '\(e.name)'.", entity: e.name)
                }
                let parent = e.superentity.flatMap { rows[$0.name]?.number } ?? 0
                guard row.parent == parent else {
                    throw mismatch(
                        "In Z_PRIMARYKEY, entity '\(e.name)' has Z_SUPER \(row.parent); the model's parent is \(e.superentity.map { "'\($0.name)' (\(parent))" } ?? "none (0)").",
                        entity: e.name)
                }
                naming.storedNumbers[e.entityNumber] = row.number
            }
            for root in entities where root.superentity == nil {
                try mapTable(root)
            }
            for root in entities where root.superentity == nil {
                for e in SQLGenerator.hierarchy(of: root) {
                    for case let r as RelationshipDescription in e.ownProperties where !r.isTransient {
                        try mapRelationship(r, of: e)
                    }
                }
            }
            return naming
        }

        /// The table of a hierarchy and the columns of its attributes and to-one relationships.
        mutating func mapTable(_ root: EntityDescription) throws {
            let table = "Z" + root.name.uppercased()
            guard let columns = try columns(of: table) else {
                throw mismatch("The store has no table \(table) for entity '\(root.name)'.", entity: root.name)
            }
            for required in ["Z_PK", "Z_ENT", "Z_OPT"] where columns[required] == nil {
                throw mismatch("The table \(table) has no column \(required).", entity: root.name)
            }
            naming.tables[root.name] = table
            var taken = Set<String>()
            let hierarchy = SQLGenerator.hierarchy(of: root).sorted { naming.storedNumber($0) < naming.storedNumber($1) }
            for e in hierarchy {
                for p in e.ownProperties where !p.isTransient {
                    let base = "Z" + p.name.uppercased()
                    if let r = p as? RelationshipDescription, !r.hasForeignKey {
                        // A one-to-one kept on the other side here: Core Data keeps this side too.
                        if !r.isToMany, r.inverseRelationship?.isToMany == false, columns[base] != nil, !taken.contains(base) {
                            taken.insert(base)
                            naming.columns[SQLNaming.key(p)] = base
                        }
                        continue
                    }
                    let name = CoreDataLayout.unusedName(base, taken: taken)
                    guard let declared = columns[name] else {
                        let kind = p is AttributeDescription ? "attribute" : "relationship"
                        throw mismatch(
                            "The table \(table) has no column \(name) for \(kind) '\(p.name)' of entity '\(e.name)'.", entity: e.name,
                            property: p.name)
                    }
                    let fits =
                        (p as? AttributeDescription).map { CoreDataLayout.columnType(declared, holds: $0.type) }
                        ?? declared.uppercased().contains("INT")
                    guard fits else {
                        let type = (p as? AttributeDescription).map { "\($0.type)" } ?? "a to-one relationship"
                        throw mismatch(
                            "The column \(table).\(name) is \(declared), which does not hold '\(e.name).\(p.name)' (\(type)).",
                            entity: e.name,
                            property: p.name)
                    }
                    taken.insert(name)
                    naming.columns[SQLNaming.key(p)] = name
                }
            }
        }

        /// A relationship's join table, and the upkeep of columns Core Data keeps besides the
        /// model's (a to-one's entity column, the second side of a one-to-one).
        mutating func mapRelationship(_ r: RelationshipDescription, of e: EntityDescription) throws {
            guard let destination = r.destinationEntity else { return }
            let q = SQLDialect.sqlite.quote
            let table = naming.tableName(e.rootEntity)
            let destinationTable = naming.tableName(destination.rootEntity)
            if r.isOrdered && r.isToMany {
                throw mismatch(
                    "'\(e.name).\(r.name)' is ordered; ordered relationships of stores made by Core Data (Z_FOK_ columns) are not supported.",
                    entity: e.name, property: r.name)
            }
            switch r.storage {
            case .foreignKey:
                guard let column = naming.columns[SQLNaming.key(r)], let columns = try columns(of: table) else { return }
                // Core Data's entity column of a to-one: Z<destination number>_<NAME>.
                let suffix = "_" + r.name.uppercased()
                for candidate in columns.keys.sorted() where candidate.hasSuffix(suffix) && candidate.first == "Z" {
                    let digits = candidate.dropFirst().dropLast(suffix.count)
                    guard !digits.isEmpty, digits.allSatisfy(\.isNumber) else { continue }
                    let destinationEntity = "(SELECT d.Z_ENT FROM \(q(destinationTable)) d WHERE d.Z_PK = \(q(table)).\(q(column)))"
                    let sql =
                        "UPDATE \(q(table)) SET \(q(candidate)) = \(destinationEntity) WHERE \(q(candidate)) IS NOT \(destinationEntity)"
                    naming.upkeep.append((sql, [e.rootEntity.name]))
                }
            case .inverseForeignKey:
                // The second side of a one-to-one, kept up to date from the first.
                guard let column = naming.columns[SQLNaming.key(r)], let inverse = r.inverseRelationship,
                    let inverseColumn = naming.columns[SQLNaming.key(inverse)]
                else { return }
                let source = "(SELECT min(s.Z_PK) FROM \(q(destinationTable)) s WHERE s.\(q(inverseColumn)) = \(q(table)).Z_PK)"
                let sql = "UPDATE \(q(table)) SET \(q(column)) = \(source) WHERE \(q(column)) IS NOT \(source)"
                naming.upkeep.append((sql, [e.rootEntity.name, destination.rootEntity.name]))
            case .joinTable(let name, let sourceIsFirst):
                guard sourceIsFirst else { return }
                try mapJoinTable(name, r, of: e, destination: destination)
            }
        }

        /// Core Data's table for a many-to-many relationship (or a to-many without inverse).
        mutating func mapJoinTable(_ name: String, _ r: RelationshipDescription, of e: EntityDescription, destination: EntityDescription)
            throws
        {
            let inverse = r.inverseRelationship
            let source = naming.storedNumber(e)
            let target = naming.storedNumber(inverse?.entity ?? destination)
            let forward = "Z_\(source)\(r.name.uppercased())"
            let backward = inverse.map { "Z_\(target)\($0.name.uppercased())" }
            var table = forward
            var columns = try self.columns(of: forward)
            if columns == nil, let backward, let found = try self.columns(of: backward) {
                table = backward
                columns = found
            }
            guard let columns else {
                throw mismatch(
                    "The store has no table \(forward)\(backward.map { " or \($0)" } ?? "") for relationship '\(e.name).\(r.name)'.",
                    entity: e.name, property: r.name)
            }
            func resolve(_ base: String, excluding: String?) -> String? {
                [base, base + "1"].first { columns[$0] != nil && $0 != excluding }
            }
            // Keys of the destination side are named after this relationship, the source's
            // after the inverse (or, without an inverse, the table's other column).
            guard let second = resolve("Z_\(target)\(r.name.uppercased())", excluding: nil) else {
                throw mismatch(
                    "The table \(table) has no column Z_\(target)\(r.name.uppercased()) for relationship '\(e.name).\(r.name)'.",
                    entity: e.name, property: r.name)
            }
            let first: String?
            if let inverse {
                first = resolve("Z_\(source)\(inverse.name.uppercased())", excluding: second)
            } else {
                first = columns.keys.sorted().first { $0 != second && !$0.hasPrefix("Z_FOK_") }
            }
            guard let first else {
                throw mismatch(
                    "The table \(table) has no column Z_\(source)\(inverse?.name.uppercased() ?? "…") for relationship '\(e.name).\(r.name)'.",
                    entity: e.name, property: r.name)
            }
            naming.joinTables[name] = SQLNaming.JoinTable(table: table, first: first, second: second)
        }
    }
}
