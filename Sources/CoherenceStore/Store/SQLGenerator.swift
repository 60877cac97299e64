import Foundation

/// The SQL dialect differences the generator knows about: SQLite, and PostgreSQL (the
/// `CoherencePostgreSQL` store). Every difference lives here and in the generator, never in a
/// store.
package enum SQLDialect: Sendable {
    case sqlite
    case postgreSQL

    /// Quotes an identifier.
    package func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The column type for an attribute type. PostgreSQL text columns compare and sort by code
    /// point (`COLLATE "C"`, as SQLite compares UTF-8 bytes), and decimals are `NUMERIC`.
    func columnType(_ type: AttributeType) -> String {
        switch (self, type.kind) {
        case (.sqlite, .integer16), (.sqlite, .integer32), (.sqlite, .integer64), (.sqlite, .boolean): return "INTEGER"
        case (.sqlite, .double), (.sqlite, .float), (.sqlite, .date): return "REAL"
        case (.sqlite, .string), (.sqlite, .uri): return "TEXT"
        case (.sqlite, .decimal): return "TEXT COLLATE \(SQLFunctions.decimalCollation)"
        case (.sqlite, .binaryData), (.sqlite, .uuid), (.sqlite, .transformable): return "BLOB"
        case (.postgreSQL, .integer16), (.postgreSQL, .integer32), (.postgreSQL, .integer64), (.postgreSQL, .boolean): return "BIGINT"
        case (.postgreSQL, .double), (.postgreSQL, .float), (.postgreSQL, .date): return "DOUBLE PRECISION"
        case (.postgreSQL, .string), (.postgreSQL, .uri): return "TEXT COLLATE \"C\""
        case (.postgreSQL, .decimal): return "NUMERIC"
        case (.postgreSQL, .binaryData), (.postgreSQL, .uuid), (.postgreSQL, .transformable): return "BYTEA"
        }
    }

    /// The type of key columns (`Z_PK`, `Z_ENT`, `Z_OPT`, foreign keys, join tables).
    var keyType: String { self == .sqlite ? "INTEGER" : "BIGINT" }

    /// Whether `expression` is one of the keys bound as one list parameter (``keyList(_:)``).
    func inList(_ expression: String) -> String {
        switch self {
        case .sqlite: return "\(expression) IN (SELECT value FROM json_each(?))"
        case .postgreSQL: return "\(expression) = ANY(?::BIGINT[])"
        }
    }

    /// Keys as the value of a list parameter (``inList(_:)``): a JSON array for SQLite, an
    /// array literal for PostgreSQL.
    package func keyList(_ keys: [Int64]) -> String {
        var text = self == .sqlite ? "[" : "{"
        text.reserveCapacity(keys.count * 8 + 2)
        var first = true
        for k in keys {
            if !first { text.append(",") }
            first = false
            text.append(String(k))
        }
        text.append(self == .sqlite ? "]" : "}")
        return text
    }

    /// A query of one row: 1 when the store has a table named `name` (as written unquoted), else 0.
    package func tableExists(_ name: String) -> String {
        switch self {
        case .sqlite: return "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '\(name)'"
        case .postgreSQL:
            return
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = '\(name.lowercased())'"
        }
    }

    /// True and false as SQL (SQLite has no boolean type).
    var trueSQL: String { self == .sqlite ? "1" : "TRUE" }
    var falseSQL: String { self == .sqlite ? "0" : "FALSE" }
    /// Null-safe equality and inequality.
    var isSQL: String { self == .sqlite ? "IS" : "IS NOT DISTINCT FROM" }
    var isNotSQL: String { self == .sqlite ? "IS NOT" : "IS DISTINCT FROM" }

    /// The statement with its `?` placeholders numbered as PostgreSQL writes them (`$1`, `$2`,
    /// … in order); `?` inside quoted text or identifiers is left alone. SQLite's SQL is
    /// returned as it is.
    package func numberingPlaceholders(_ sql: String) -> String {
        guard self == .postgreSQL, sql.contains("?") else { return sql }
        var out = ""
        out.reserveCapacity(sql.utf8.count + 16)
        var n = 0
        var quote: Character?
        for c in sql {
            if let q = quote {
                if c == q { quote = nil }
                out.append(c)
            } else if c == "'" || c == "\"" {
                quote = c
                out.append(c)
            } else if c == "?" {
                n += 1
                out += "$\(n)"
            } else {
                out.append(c)
            }
        }
        return out
    }
}

/// Column layout of a SELECT over one entity hierarchy, and how columns map to slots.
package struct SelectPlan: Sendable {
    /// The selected columns after Z_PK, Z_ENT, Z_OPT (as SQL, qualified by the alias).
    package var columnsSQL: String
    /// For each concrete entity number: (column index in the result, slot).
    package var mapping: [Int: [(column: Int32, slot: Int)]]
    /// Concrete entities by number.
    package var entities: [Int: EntityDescription]
    /// The entity number of every row, when the hierarchy has one entity (the SQL selects it as
    /// a constant, which a row reader need not read).
    package var singleEntityNumber: Int? = nil
}

/// Generates every SQL statement a store runs: schema, reads and writes. Keeping all SQL text
/// here lets another dialect (PostgreSQL) reuse the stores' logic.
package struct SQLGenerator: Sendable {
    package let dialect: SQLDialect
    /// The store's names for tables, columns and entity numbers.
    package let naming: SQLNaming

    package init(dialect: SQLDialect = .sqlite, naming: SQLNaming = .coherence) {
        self.dialect = dialect
        self.naming = naming
    }

    // MARK: Names

    /// The table of an entity hierarchy (single-table inheritance: one table per root entity).
    package func table(_ entity: EntityDescription) -> String {
        dialect.quote(naming.tableName(entity.rootEntity))
    }

    /// The column of a stored property.
    package func column(_ property: PropertyDescription) -> String {
        dialect.quote(naming.columnName(property))
    }

    /// The order column (unquoted) of an ordered to-many relationship kept in its destinations'
    /// foreign keys (``RelationshipDescription/keepsOrderInDestinations``), or of its to-one
    /// inverse: Core Data's `Z_FOK_` followed by the foreign-key column's name without its
    /// leading `Z` (`ZPLAYLIST` → `Z_FOK_PLAYLIST`, `playlist` → `Z_FOK_playlist`). It sits in
    /// the destinations' table, beside the foreign key. Nil for other relationships.
    package func orderColumnName(_ r: RelationshipDescription) -> String? {
        let key: RelationshipDescription
        if r.keepsOrderInDestinations {
            guard let inverse = r.inverseRelationship else { return nil }
            key = inverse
        } else if r.hasOrderColumn {
            key = r
        } else {
            return nil
        }
        let name = naming.columnName(key)
        return "Z_FOK_" + (name.hasPrefix("Z") ? String(name.dropFirst()) : name)
    }

    /// ``orderColumnName(_:)``, quoted.
    package func orderColumn(_ r: RelationshipDescription) -> String? {
        orderColumnName(r).map(dialect.quote)
    }

    /// Gives each destination of an ordered relationship (`r`, kept in the destinations' keys)
    /// its place: bound the place, the destination's key and the source's key (a row that no
    /// longer names the source is left alone).
    package func writeOrder(_ r: RelationshipDescription) -> String? {
        guard let dest = r.destinationEntity, let inverse = r.inverseRelationship, let order = orderColumn(r) else { return nil }
        return "UPDATE \(table(dest)) SET \(order) = ? WHERE Z_PK = ? AND \(column(inverse)) = ?"
    }

    /// Places a destination of an ordered relationship (`r`) after every other destination of
    /// its source: bound the source's key, the destination's key and the source's key again.
    package func appendOrder(_ r: RelationshipDescription) -> String? {
        guard let dest = r.destinationEntity, let inverse = r.inverseRelationship, let order = orderColumn(r) else { return nil }
        let fk = column(inverse)
        return """
            UPDATE \(table(dest)) SET \(order) = (SELECT COALESCE(MAX(o.\(order)), -1) + 1 FROM \(table(dest)) AS o \
            WHERE o.\(fk) = ? AND o.Z_PK <> \(table(dest)).Z_PK) WHERE Z_PK = ? AND \(fk) = ?
            """
    }

    /// Numbers the destinations of every source of an ordered relationship's to-one inverse
    /// (`inverse`, ``RelationshipDescription/hasOrderColumn``) in primary-key order, the order
    /// they were read in before the store had the column (a store made by an earlier version).
    package func numberOrder(_ inverse: RelationshipDescription) -> String? {
        guard let order = orderColumn(inverse), let e = inverse.entity else { return nil }
        let fk = column(inverse), t = table(e)
        return """
            UPDATE \(t) SET \(order) = (SELECT COUNT(*) FROM \(t) AS o WHERE o.\(fk) = \(t).\(fk) AND o.Z_PK < \(t).Z_PK) \
            WHERE \(fk) IS NOT NULL
            """
    }

    /// Join table name and (source column, destination column) for a relationship seen from its
    /// own side.
    package func joinTable(_ r: RelationshipDescription) -> (table: String, source: String, destination: String)? {
        guard case .joinTable(let name, let sourceIsFirst) = r.storage else { return nil }
        if let mapped = naming.joinTables[name] {
            let first = dialect.quote(mapped.first), second = dialect.quote(mapped.second)
            return (dialect.quote(mapped.table), sourceIsFirst ? first : second, sourceIsFirst ? second : first)
        }
        return (dialect.quote(name), sourceIsFirst ? "Z_1" : "Z_2", sourceIsFirst ? "Z_2" : "Z_1")
    }

    /// The number stored in `Z_ENT` for rows of `entity`.
    package func storedNumber(_ entity: EntityDescription) -> Int { naming.storedNumber(entity) }

    /// The entity number of a row of `alias` as the model numbers it: its `Z_ENT`, translated
    /// when the store numbers entities its own way (a store made by Core Data).
    package func entityNumber(alias: String) -> String {
        let column = alias.isEmpty ? "Z_ENT" : alias + ".Z_ENT"
        guard naming.translatesNumbers else { return column }
        let cases = naming.storedNumbers.sorted { $0.key < $1.key }.map { "WHEN \($0.value) THEN \($0.key)" }
        return "(CASE \(column) \(cases.joined(separator: " ")) ELSE 0 END)"
    }

    /// A list of entity numbers as stored, for `Z_ENT IN (…)`.
    func storedNumberList(_ modelNumbers: [Int]) -> String {
        modelNumbers.map { String(naming.storedNumber($0)) }.joined(separator: ", ")
    }

    // MARK: Schema

    /// Statements that create the metadata tables.
    package func createMetadataTables() -> [String] {
        [
            "CREATE TABLE IF NOT EXISTS Z_METADATA (Z_KEY TEXT PRIMARY KEY NOT NULL, Z_VALUE TEXT)",
            "CREATE TABLE IF NOT EXISTS Z_PRIMARYKEY (Z_ENT \(dialect.keyType) PRIMARY KEY NOT NULL, Z_NAME TEXT NOT NULL, Z_MAX \(dialect.keyType) NOT NULL)"
        ]
    }

    package var readMetadata: String { "SELECT Z_KEY, Z_VALUE FROM Z_METADATA" }
    package var writeMetadata: String {
        switch dialect {
        case .sqlite: return "INSERT OR REPLACE INTO Z_METADATA (Z_KEY, Z_VALUE) VALUES (?, ?)"
        case .postgreSQL:
            return "INSERT INTO Z_METADATA (Z_KEY, Z_VALUE) VALUES (?, ?) ON CONFLICT (Z_KEY) DO UPDATE SET Z_VALUE = EXCLUDED.Z_VALUE"
        }
    }
    package var metadataTableExists: String {
        switch dialect {
        case .sqlite: return "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'Z_METADATA'"
        case .postgreSQL:
            return "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'z_metadata'"
        }
    }
    package var userTableCount: String {
        switch dialect {
        case .sqlite: return "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        case .postgreSQL: return "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
        }
    }
    package var initPrimaryKey: String {
        switch dialect {
        case .sqlite: return "INSERT OR IGNORE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_MAX) VALUES (?, ?, 0)"
        case .postgreSQL: return "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_MAX) VALUES (?, ?, 0) ON CONFLICT DO NOTHING"
        }
    }
    /// Reserves keys of `root`'s table; parameters: the count, then the root's entity number.
    /// The counter moves on from the table's largest key when it is behind it (another program
    /// inserted rows, or put the counter back), so a new key never names a row that exists.
    /// (A counter ahead of the table, as reserved keys leave it, is kept.) In SQLite, a counter
    /// that is no integer (NULL, as a store made by Core Data allows, or text or a real number
    /// another program wrote) counts as its integer part, 0 when it has none: SQLite's `MAX`
    /// would give NULL or the text, and the sum NULL, a real number or a key that exists.
    package func allocatePrimaryKeys(_ root: EntityDescription) -> String {
        let largest = "(SELECT COALESCE(MAX(Z_PK), 0) FROM \(table(root)))"
        let counter =
            dialect == .postgreSQL
            ? "GREATEST(Z_MAX, \(largest))" : "MAX(COALESCE(CAST(Z_MAX AS INTEGER), 0), \(largest))"
        return "UPDATE Z_PRIMARYKEY SET Z_MAX = \(counter) + ? WHERE Z_ENT = ? RETURNING Z_MAX"
    }

    /// Statements that create the tables and indexes for `entities` (whole hierarchies).
    package func createSchema(for entities: [EntityDescription]) -> [String] {
        var statements: [String] = []
        let roots = Set(entities.map { ObjectIdentifier($0.rootEntity) })
        let rootEntities = entities.filter { roots.contains(ObjectIdentifier($0)) }
        var joinTables = Set<String>()
        // Join tables come last: PostgreSQL wants the tables they reference to exist.
        var joinStatements: [String] = []
        for root in rootEntities {
            let hierarchy = Self.hierarchy(of: root)
            let key = dialect.keyType
            var columns = ["Z_PK \(key) PRIMARY KEY", "Z_ENT \(key) NOT NULL", "Z_OPT \(key) NOT NULL"]
            for p in Self.storedColumns(of: hierarchy) {
                if let a = p as? AttributeDescription {
                    columns.append("\(column(a)) \(dialect.columnType(a.type))")
                } else {
                    columns.append("\(column(p)) \(key)")
                    if let r = p as? RelationshipDescription, let order = orderColumn(r) { columns.append("\(order) \(key)") }
                }
            }
            statements.append("CREATE TABLE \(table(root)) (\(columns.joined(separator: ", ")))")
            if hierarchy.count > 1 {
                statements.append("CREATE INDEX \(dialect.quote("Z_\(root.name)_Z_ENT")) ON \(table(root)) (Z_ENT)")
            }
            for e in hierarchy {
                let subset =
                    e.descendantNumbers.count < hierarchy.count
                    ? " WHERE Z_ENT IN (\(storedNumberList(e.descendantNumbers)))" : ""
                for constraint in e.uniquenessConstraints {
                    let cols = constraint.compactMap { e.propertiesByName[$0] }.map(column)
                    let name = dialect.quote("Z_\(e.name)_UNIQUE_\(constraint.joined(separator: "_"))")
                    statements.append("CREATE UNIQUE INDEX \(name) ON \(table(root)) (\(cols.joined(separator: ", ")))\(subset)")
                }
                for index in e.indexes {
                    let cols = index.compactMap { e.propertiesByName[$0] }.map(column)
                    let name = dialect.quote("Z_\(e.name)_\(index.joined(separator: "_"))")
                    statements.append("CREATE INDEX \(name) ON \(table(root)) (\(cols.joined(separator: ", ")))")
                }
                for r in e.relationships where r.entity === e {
                    if r.hasForeignKey && !r.isTransient { statements.append(foreignKeyIndex(r, of: e)) }
                    if case .joinTable(let jname, let sourceIsFirst) = r.storage, !r.isTransient, joinTables.insert(jname).inserted,
                        let dest = r.destinationEntity
                    {
                        // A destination of another configuration has no table here (PostgreSQL
                        // refuses a reference to it): such a relationship never holds pairs, as
                        // relationships do not cross stores.
                        func references(_ entity: EntityDescription) -> String {
                            roots.contains(ObjectIdentifier(entity.rootEntity))
                                ? " REFERENCES \(table(entity))(Z_PK) ON DELETE CASCADE" : ""
                        }
                        let first = sourceIsFirst ? e : dest
                        let second = sourceIsFirst ? dest : e
                        joinStatements.append(
                            """
                            CREATE TABLE \(dialect.quote(jname)) (Z_1 \(key) NOT NULL\(references(first)), \
                            Z_2 \(key) NOT NULL\(references(second)), PRIMARY KEY (Z_1, Z_2))\(dialect == .sqlite ? " WITHOUT ROWID" : "")
                            """)
                        joinStatements.append("CREATE INDEX \(dialect.quote("\(jname)_Z_2")) ON \(dialect.quote(jname)) (Z_2, Z_1)")
                    }
                }
            }
        }
        return statements + joinStatements
    }

    /// The index of the foreign-key column of `r`, a to-one relationship declared by `e`.
    package func foreignKeyIndex(_ r: RelationshipDescription, of e: EntityDescription) -> String {
        "CREATE INDEX \(dialect.quote("Z_\(e.name)_\(r.name)")) ON \(table(e)) (\(column(r)))"
    }

    /// An entity and all its descendants.
    package static func hierarchy(of entity: EntityDescription) -> [EntityDescription] {
        var result: [EntityDescription] = []
        var stack = [entity]
        while let e = stack.popLast() {
            result.append(e)
            stack.append(contentsOf: e.subentities.reversed())
        }
        return result
    }

    /// The distinct stored properties of a set of entities, in a stable order.
    static func storedColumns(of entities: [EntityDescription]) -> [PropertyDescription] {
        var seen = Set<ObjectIdentifier>()
        var result: [PropertyDescription] = []
        for e in entities {
            for p in e.storedProperties where seen.insert(ObjectIdentifier(p)).inserted { result.append(p) }
        }
        return result
    }

    // MARK: Reads

    /// The columns and slot mapping for reading rows of `entity` (and its sub-entities).
    package func selectPlan(for entity: EntityDescription, alias: String = "t0") -> SelectPlan {
        let hierarchy = Self.hierarchy(of: entity)
        let columns = Self.storedColumns(of: hierarchy)
        var index: [ObjectIdentifier: Int32] = [:]
        for (i, p) in columns.enumerated() { index[ObjectIdentifier(p)] = Int32(i + 3) }
        var mapping: [Int: [(column: Int32, slot: Int)]] = [:]
        var entities: [Int: EntityDescription] = [:]
        for e in hierarchy {
            entities[e.entityNumber] = e
            mapping[e.entityNumber] = e.storedProperties.compactMap { p in index[ObjectIdentifier(p)].map { ($0, p.slot) } }
        }
        // A hierarchy of one entity reads its number as a constant: every row of its table is of
        // that entity (other entities' rows are excluded by the fetch's restriction), and a
        // constant costs SQLite no column decoding.
        let entityColumn = hierarchy.count == 1 ? "\(entity.entityNumber)" : entityNumber(alias: alias)
        let sql = ([alias + ".Z_PK", entityColumn, alias + ".Z_OPT"] + columns.map { alias + "." + column($0) })
            .joined(separator: ", ")
        return SelectPlan(
            columnsSQL: sql, mapping: mapping, entities: entities,
            singleEntityNumber: hierarchy.count == 1 ? entity.entityNumber : nil)
    }

    /// A SELECT for a fetch: rows (`plan`), keys and entity numbers (no plan; `keyColumns`
    /// replaces `t0.Z_PK, t0.Z_ENT`) or a count.
    package func select(
        _ fetch: StoreFetch, plan: SelectPlan?, storeIdentifier: UUID, count: Bool = false,
        keyColumns: String? = nil
    ) throws(CoherenceError) -> (sql: String, bindings: [StoredValue]) {
        let builder = QueryBuilder(generator: self, rootEntity: fetch.entity, storeIdentifier: storeIdentifier)
        let whereSQL = try whereClause(fetch, builder)
        var orderBy: [String] = []
        for key in fetch.sortKeys {
            var expr = try builder.sql(.path(key.path))
            if key.folded { expr = "\(SQLFunctions.foldFunction)(\(expr))" }
            // Decimals sort numerically with NaN first, as Swift's `Decimal` orders them
            // (PostgreSQL's `NUMERIC` sorts NaN after every number: it is sorted as −Infinity).
            if key.path.attribute?.type == .decimal {
                if dialect == .sqlite {
                    expr += " COLLATE \(SQLFunctions.decimalOrderCollation)"
                } else {
                    expr = QueryBuilder.decimalOrderPG(expr, expr)
                }
            }
            if key.path.attribute?.type.keepsNegativeZero == true && dialect == .sqlite {
                // −0.0 is a blob, which SQL sorts after every number: sort it as 0. (NaN, a blob
                // too, sorts after every number, NaNs by their bits, as the evaluator sorts them.)
                expr = "(CASE WHEN \(expr) = \(QueryBuilder.negativeZero) THEN 0.0 ELSE \(expr) END)"
            }
            // nil sorts first, as in SQLite (PostgreSQL sorts NULL last by default).
            let nulls = dialect == .postgreSQL ? (key.ascending ? " NULLS FIRST" : " NULLS LAST") : ""
            orderBy.append(expr + (key.ascending ? " ASC" : " DESC") + nulls)
        }
        let from = "\(table(fetch.entity)) AS t0\(builder.joins(forScope: 0))"
        if count {
            return ("SELECT count(*) FROM \(from)\(whereSQL)", builder.bindings)
        }
        let columns = plan?.columnsSQL ?? keyColumns ?? "t0.Z_PK, \(entityNumber(alias: "t0"))"
        var sql = "SELECT \(columns) FROM \(from)\(whereSQL)"
        if !orderBy.isEmpty || fetch.limit != nil || fetch.offset > 0 {
            orderBy.append("t0.Z_PK ASC")  // deterministic ties, the same as in-memory evaluation
            sql += " ORDER BY " + orderBy.joined(separator: ", ")
        }
        var bindings = builder.bindings
        if fetch.limit != nil || fetch.offset > 0 {
            sql += " LIMIT ? OFFSET ?"
            // No limit: -1 for SQLite, NULL (LIMIT ALL) for PostgreSQL.
            bindings.append(fetch.limit.map { .integer(Int64($0)) } ?? (dialect == .sqlite ? .integer(-1) : .null))
            bindings.append(.integer(Int64(fetch.offset)))
        }
        return (sql, bindings)
    }

    /// The WHERE clause of a fetch over `t0` (the entity restriction and the predicate), or
    /// nothing; the predicate's joins and bindings go to `builder`.
    func whereClause(_ fetch: StoreFetch, _ builder: QueryBuilder) throws(CoherenceError) -> String {
        var conditions: [String] = []
        if let restriction = entityRestriction(fetch.entity, includesSubentities: fetch.includesSubentities, alias: "t0") {
            conditions.append(restriction)
        }
        if let predicate = fetch.predicate {
            conditions.append(try builder.condition(predicate))
        }
        return conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
    }

    /// Restricts a hierarchy table to an entity (and its descendants); nil when every row qualifies.
    func entityRestriction(_ entity: EntityDescription, includesSubentities: Bool, alias: String) -> String? {
        if !includesSubentities {
            if entity.subentities.isEmpty && entity.superentity == nil { return nil }
            return "\(alias).Z_ENT = \(storedNumber(entity))"
        }
        if entity.superentity == nil { return nil }
        let numbers = entity.descendantNumbers
        return numbers.count == 1
            ? "\(alias).Z_ENT = \(naming.storedNumber(numbers[0]))"
            : "\(alias).Z_ENT IN (\(storedNumberList(numbers)))"
    }

    /// Rows of `entity` (and its sub-entities) by primary key (the keys bound as one JSON
    /// array). A key of a row of another entity in the same table finds nothing. `plan` is the
    /// plan of the hierarchy's root, or of `entity`.
    package func selectByKeys(_ entity: EntityDescription, plan: SelectPlan) -> String {
        "SELECT \(plan.columnsSQL) FROM \(table(entity)) AS t0 WHERE \(dialect.inList("t0.Z_PK"))"
            + (entityRestriction(entity, includesSubentities: true, alias: "t0").map { " AND " + $0 } ?? "")
    }

    /// Current version and values of one row of `entity` (or a sub-entity), for conflict
    /// reports; a row of another entity in the same table is not read.
    package func selectOne(_ entity: EntityDescription, plan: SelectPlan) -> String {
        "SELECT \(plan.columnsSQL) FROM \(table(entity)) AS t0 WHERE t0.Z_PK = ?"
            + (entityRestriction(entity, includesSubentities: true, alias: "t0").map { " AND " + $0 } ?? "")
    }

    /// Destination keys of a to-many or inverse relationship for a list of source keys.
    /// Result columns: source key, destination key, destination entity number.
    package func selectRelated(_ r: RelationshipDescription) -> String? {
        guard let dest = r.destinationEntity else { return nil }
        switch r.storage {
        case .foreignKey:
            // To-one stored on this side: the key is in the source row.
            guard let source = r.entity else { return nil }
            return """
                SELECT s.Z_PK, d.Z_PK, \(entityNumber(alias: "d")) FROM \(table(source)) AS s JOIN \(table(dest)) AS d ON d.Z_PK = s.\(column(r)) \
                WHERE \(dialect.inList("s.Z_PK"))
                """
        case .inverseForeignKey:
            guard let inverse = r.inverseRelationship else { return nil }
            var sql =
                "SELECT d.\(column(inverse)), d.Z_PK, \(entityNumber(alias: "d")) FROM \(table(dest)) AS d WHERE \(dialect.inList("d.\(column(inverse))"))"
            if let restriction = entityRestriction(dest, includesSubentities: true, alias: "d") { sql += " AND " + restriction }
            if let order = orderColumn(r) {
                // Rows without a place (written by other means) after the placed ones, by key.
                sql += " ORDER BY d.\(column(inverse)), d.\(order) IS NULL, d.\(order), d.Z_PK"
            } else if r.isOrdered {
                sql += " ORDER BY d.Z_PK"
            }
            return sql
        case .joinTable:
            guard let (jt, src, dst) = joinTable(r) else { return nil }
            return """
                SELECT j.\(src), d.Z_PK, \(entityNumber(alias: "d")) FROM \(jt) AS j JOIN \(table(dest)) AS d ON d.Z_PK = j.\(dst) \
                WHERE \(dialect.inList("j.\(src)"))
                """ + (r.isOrdered ? " ORDER BY j.\(src), d.Z_PK" : "")
        }
    }

    /// Rows of `entity` whose values for `constraint` equal the bound values (null-safe).
    package func selectUniquenessMatches(
        _ entity: EntityDescription, constraint: [PropertyDescription],
        declaringEntity: EntityDescription
    ) -> String {
        var conditions = constraint.map { "\(column($0)) \(dialect.isSQL) ?" }
        if let restriction = entityRestriction(declaringEntity, includesSubentities: true, alias: table(entity)) {
            conditions.append(restriction)
        }
        return "SELECT Z_PK, \(entityNumber(alias: "")) FROM \(table(entity)) WHERE " + conditions.joined(separator: " AND ")
    }

    // MARK: Writes

    /// INSERT of a full row of `entity` (Z_PK, Z_ENT, Z_OPT, then `entity.storedProperties`).
    /// `onConflict: false` leaves PostgreSQL's `ON CONFLICT DO NOTHING` out (a table with a
    /// deferrable unique constraint refuses it).
    package func insert(_ entity: EntityDescription, onConflict conflicts: Bool = true) -> String {
        let cols = ["Z_PK", "Z_ENT", "Z_OPT"] + entity.storedProperties.map(column)
        let marks = Array(repeating: "?", count: cols.count).joined(separator: ", ")
        // PostgreSQL: a row that violates a unique index is not inserted (no error, which would
        // end the transaction); the store reads the changed-row count and reports a conflict.
        let onConflict = dialect == .postgreSQL && conflicts ? " ON CONFLICT DO NOTHING" : ""
        return "INSERT INTO \(table(entity)) (\(cols.joined(separator: ", "))) VALUES (\(marks))\(onConflict)"
    }

    /// UPDATE of some columns; parameters: the values in `properties` order, then (SQLite, when
    /// `checkVersion`) the new Z_OPT, then Z_PK, then (when `checkVersion`) the expected Z_OPT.
    /// (No RETURNING clause for SQLite: it would build a temporary table for it on every
    /// execution; the writer works the new version out, ``nextVersion(after:)`` of the expected
    /// one, and binds it. PostgreSQL returns the new Z_OPT.)
    package func update(_ entity: EntityDescription, properties: [PropertyDescription], checkVersion: Bool) -> String {
        let version = checkVersion && dialect == .sqlite ? "Z_OPT = ?" : nextVersion
        let sets = properties.map { "\(column($0)) = ?" } + [version]
        return "UPDATE \(table(entity)) SET \(sets.joined(separator: ", ")) WHERE Z_PK = ?"
            + (checkVersion ? " AND \(storedVersion) = ?" : "")
            + (dialect == .postgreSQL ? " RETURNING Z_OPT" : "")
    }

    /// Moves a row's version on by one; from the largest integer (a version another program
    /// wrote) back to 1, as ``nextVersion(after:)`` does: `Z_OPT + 1` would leave SQLite a REAL
    /// (no version a reader could expect) and fail PostgreSQL's update. SQLite reads the version
    /// as the store reads it (``storedVersion``), so that a row whose version another program
    /// wrote as text or a real number moves on from the version its objects were loaded at.
    var nextVersion: String {
        let version = dialect == .sqlite ? "CAST(Z_OPT AS INTEGER)" : "Z_OPT"
        return "Z_OPT = CASE WHEN \(version) < \(Int64.max) THEN \(version) + 1 ELSE 1 END"
    }

    /// The version ``nextVersion`` gives a row at `version`.
    @inline(__always) package static func nextVersion(after version: Int64) -> Int64 {
        version == .max ? 1 : version + 1
    }

    /// The row version a check compares, as the store reads it (`sqlite3_column_int64`): a store
    /// made by Core Data declares `Z_OPT` without `NOT NULL`, and a row another program inserted
    /// there may have none, which reads as version 0 (`Z_OPT = 0` would never match it, so the
    /// row could never be saved); SQLite keeps text, real numbers and blobs another program
    /// writes in an `INTEGER` column as they are, which read as the integer `CAST` makes of them.
    var storedVersion: String {
        guard dialect == .sqlite else { return naming.isCoreData ? "COALESCE(Z_OPT, 0)" : "Z_OPT" }
        return naming.isCoreData ? "COALESCE(CAST(Z_OPT AS INTEGER), 0)" : "CAST(Z_OPT AS INTEGER)"
    }

    /// DELETE of one row; parameters: Z_PK, then (when `checkVersion`) the expected Z_OPT.
    package func delete(_ entity: EntityDescription, checkVersion: Bool) -> String {
        "DELETE FROM \(table(entity)) WHERE Z_PK = ?" + (checkVersion ? " AND \(storedVersion) = ?" : "")
    }

    /// Version of one row.
    package func selectVersion(_ entity: EntityDescription) -> String {
        "SELECT Z_OPT FROM \(table(entity)) WHERE Z_PK = ?"
    }

    /// Insert into a join table; parameters: source key, destination key.
    package func insertJoin(_ r: RelationshipDescription) -> String? {
        guard let (jt, src, dst) = joinTable(r) else { return nil }
        switch dialect {
        case .sqlite: return "INSERT OR IGNORE INTO \(jt) (\(src), \(dst)) VALUES (?, ?)"
        case .postgreSQL: return "INSERT INTO \(jt) (\(src), \(dst)) VALUES (?, ?) ON CONFLICT DO NOTHING"
        }
    }

    /// Insert into a join table without `ON CONFLICT` (PostgreSQL refuses it on a table with a
    /// deferrable key), skipping a pair the table holds already; parameters: source key,
    /// destination key, and both again.
    package func insertJoinIfAbsent(_ r: RelationshipDescription) -> String? {
        guard let (jt, src, dst) = joinTable(r) else { return nil }
        return "INSERT INTO \(jt) (\(src), \(dst)) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM \(jt) WHERE \(src) = ? AND \(dst) = ?)"
    }

    /// The unquoted name of a relationship's join table (nil: it has none).
    package func joinTableName(_ r: RelationshipDescription) -> String? {
        guard case .joinTable(let name, _) = r.storage else { return nil }
        return naming.joinTables[name]?.table ?? name
    }

    /// Delete from a join table; parameters: source key, destination key.
    package func deleteJoin(_ r: RelationshipDescription) -> String? {
        guard let (jt, src, dst) = joinTable(r) else { return nil }
        return "DELETE FROM \(jt) WHERE \(src) = ? AND \(dst) = ?"
    }
}
