/// The SQL of a store's persistent history: one row per transaction in `Z_HISTORYTRANSACTION`
/// (its changes encoded by ``HistoryCoding`` in `Z_CHANGES`), and in `Z_HISTORYSTATE` the highest
/// transaction number ever deleted, so that numbers are never reused and a fetch after a deleted
/// transaction is known to be incomplete.
///
/// SQLite's statements are the `static let`s (its writers are serialized by `BEGIN IMMEDIATE`,
/// so a new transaction takes the last number plus one); the functions taking a dialect give
/// PostgreSQL's too. A PostgreSQL store keeps the last number handed out in `Z_HISTORYSTATE`
/// (`Z_LAST`), which a save moves on with `UPDATE … RETURNING`: that row's lock, held until the
/// save commits, serializes the writers of every process, so numbers follow commit order.
package enum HistorySQL {
    /// The table of history transactions, one row each.
    package static let transactionTable = "Z_HISTORYTRANSACTION"

    static let createTables = createTables(.sqlite)

    /// The statements that create the history tables (and, on PostgreSQL, the progress table).
    package static func createTables(_ dialect: SQLDialect) -> [String] {
        switch dialect {
        case .sqlite:
            return [
                """
                CREATE TABLE IF NOT EXISTS Z_HISTORYTRANSACTION (Z_PK INTEGER PRIMARY KEY, Z_TIMESTAMP REAL NOT NULL, \
                Z_AUTHOR TEXT, Z_CONTEXTNAME TEXT, Z_PROCESSID TEXT NOT NULL, Z_ENTITIES TEXT NOT NULL, \
                Z_CHANGECOUNT INTEGER NOT NULL, Z_CHANGES BLOB NOT NULL)
                """,
                "CREATE TABLE IF NOT EXISTS Z_HISTORYSTATE (Z_KEY INTEGER PRIMARY KEY NOT NULL, Z_DELETEDTHROUGH INTEGER NOT NULL)",
                "INSERT OR IGNORE INTO Z_HISTORYSTATE (Z_KEY, Z_DELETEDTHROUGH) VALUES (1, 0)"
            ]
        case .postgreSQL:
            return [
                """
                CREATE TABLE IF NOT EXISTS Z_HISTORYTRANSACTION (Z_PK BIGINT PRIMARY KEY, Z_TIMESTAMP DOUBLE PRECISION NOT NULL, \
                Z_AUTHOR TEXT, Z_CONTEXTNAME TEXT, Z_PROCESSID TEXT NOT NULL, Z_ENTITIES TEXT NOT NULL, \
                Z_CHANGECOUNT BIGINT NOT NULL, Z_CHANGES BYTEA NOT NULL)
                """,
                """
                CREATE TABLE IF NOT EXISTS Z_HISTORYSTATE (Z_KEY BIGINT PRIMARY KEY NOT NULL, Z_DELETEDTHROUGH BIGINT NOT NULL, \
                Z_LAST BIGINT NOT NULL)
                """,
                "INSERT INTO Z_HISTORYSTATE (Z_KEY, Z_DELETEDTHROUGH, Z_LAST) VALUES (1, 0, 0) ON CONFLICT DO NOTHING",
                HistoryProgressSQL.create(dialect)
            ]
        }
    }

    static let tableExists = tableExists(.sqlite)

    /// The number of history tables in the store (0 or 1).
    package static func tableExists(_ dialect: SQLDialect) -> String { dialect.tableExists(transactionTable) }

    /// The highest number deleted, as an integer: text or a blob another program wrote there
    /// counts as its integer part (SQLite's `max` would take it over every number).
    static let deletedThrough = "coalesce((SELECT CAST(Z_DELETEDTHROUGH AS INTEGER) FROM Z_HISTORYSTATE WHERE Z_KEY = 1), 0)"

    /// The last number handed out: the highest remaining, or the highest deleted.
    static let lastNumber = "max(coalesce((SELECT max(Z_PK) FROM Z_HISTORYTRANSACTION), 0), \(deletedThrough))"

    /// The last number handed out, as a query of one row.
    package static func selectLastNumber(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: return "SELECT \(lastNumber)"
        case .postgreSQL: return "SELECT coalesce((SELECT Z_LAST FROM Z_HISTORYSTATE WHERE Z_KEY = 1), 0)"
        }
    }

    static let state = state(.sqlite)

    /// The highest number deleted and the last number handed out, as a query of one row.
    package static func state(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: return "SELECT \(deletedThrough), \(lastNumber)"
        case .postgreSQL:
            return
                "SELECT coalesce((SELECT Z_DELETEDTHROUGH FROM Z_HISTORYSTATE WHERE Z_KEY = 1), 0), coalesce((SELECT Z_LAST FROM Z_HISTORYSTATE WHERE Z_KEY = 1), 0)"
        }
    }

    static let insert = insert(.sqlite)

    /// Appends a transaction numbered one above the last number (read inside the write
    /// transaction, so concurrent writers in other processes never share a number). Bound:
    /// timestamp, author, context name, entities column, change count, changes. This process's
    /// ID is part of the text (it never changes), so no save binds (and SQLite copies) it. The
    /// PostgreSQL statement returns the number.
    package static func insert(_ dialect: SQLDialect) -> String {
        let columns = "Z_PK, Z_TIMESTAMP, Z_AUTHOR, Z_CONTEXTNAME, Z_PROCESSID, Z_ENTITIES, Z_CHANGECOUNT, Z_CHANGES"
        let values = "?, ?, ?, \(literal(HistoryTransactionRecord.processID)), ?, ?, ?"
        switch dialect {
        case .sqlite:
            return "INSERT INTO Z_HISTORYTRANSACTION (\(columns)) VALUES (\(lastNumber) + 1, \(values))"
        case .postgreSQL:
            return "WITH n AS (UPDATE Z_HISTORYSTATE SET Z_LAST = Z_LAST + 1 WHERE Z_KEY = 1 RETURNING Z_LAST) "
                + "INSERT INTO Z_HISTORYTRANSACTION (\(columns)) VALUES ((SELECT Z_LAST FROM n), \(values)) RETURNING Z_PK"
        }
    }

    /// `text` as an SQL string literal.
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    static let noteDeleted = noteDeleted(.sqlite)

    /// Raises the highest number deleted to the bound one.
    package static func noteDeleted(_ dialect: SQLDialect) -> String {
        let highest = dialect == .sqlite ? "max(CAST(Z_DELETEDTHROUGH AS INTEGER), ?)" : "GREATEST(Z_DELETEDTHROUGH, ?)"
        return "UPDATE Z_HISTORYSTATE SET Z_DELETEDTHROUGH = \(highest) WHERE Z_KEY = 1"
    }

    /// The transactions a query selects, oldest first (`filter`: its WHERE clause).
    package static func select(_ q: HistoryQuery, filter: String) -> String {
        let columns = "Z_PK, Z_TIMESTAMP, Z_AUTHOR, Z_CONTEXTNAME, Z_PROCESSID" + (q.includesChanges ? ", Z_CHANGES" : "")
        return "SELECT \(columns) FROM \(transactionTable)\(filter) ORDER BY Z_PK\(limit(q))"
    }

    /// How many transactions a query selects.
    package static func count(_ q: HistoryQuery, filter: String) -> String {
        "SELECT count(*) FROM (SELECT 1 FROM \(transactionTable)\(filter)\(limit(q))) AS selected"
    }

    private static func limit(_ q: HistoryQuery) -> String { q.limit > 0 ? " LIMIT \(q.limit)" : "" }

    /// How many transactions a delete removes and the highest number among them.
    package static func deletedRange(filter: String) -> String {
        "SELECT count(*), coalesce(max(Z_PK), 0) FROM \(transactionTable)\(filter)"
    }

    /// Removes the transactions a delete selects (`returningNumbers`: and returns their numbers).
    package static func delete(filter: String, returningNumbers: Bool = false) -> String {
        "DELETE FROM \(transactionTable)\(filter)" + (returningNumbers ? " RETURNING Z_PK" : "")
    }

    /// The WHERE clause of a query and its bound values.
    package static func filter(_ q: HistoryQuery, _ dialect: SQLDialect = .sqlite) -> (sql: String, bindings: [StoredValue]) {
        var conditions: [String] = []
        var bindings: [StoredValue] = []
        func list(_ values: Set<String>) -> String {
            let sorted = values.sorted()
            bindings += sorted.map { .text($0) }
            return "(" + sorted.map { _ in "?" }.joined(separator: ", ") + ")"
        }
        switch q.bound {
        case .afterNumber(let n):
            if let n {
                conditions.append("Z_PK > ?")
                bindings.append(.integer(n))
            }
        case .beforeNumber(let n):
            if let n {
                conditions.append("Z_PK < ?")
                bindings.append(.integer(n))
            }
        case .afterDate(let d):
            conditions.append("Z_TIMESTAMP > ?")
            bindings.append(.real(d.timeIntervalSinceReferenceDate))
        case .beforeDate(let d):
            conditions.append("Z_TIMESTAMP < ?")
            bindings.append(.real(d.timeIntervalSinceReferenceDate))
        }
        let none = dialect.falseSQL
        if let authors = q.authors { conditions.append(authors.isEmpty ? none : "Z_AUTHOR IN " + list(authors)) }
        if !q.excludedAuthors.isEmpty { conditions.append("(Z_AUTHOR IS NULL OR Z_AUTHOR NOT IN " + list(q.excludedAuthors) + ")") }
        if let names = q.contextNames { conditions.append(names.isEmpty ? none : "Z_CONTEXTNAME IN " + list(names)) }
        if let entities = q.entityNames {
            if entities.isEmpty {
                conditions.append(none)
            } else {
                let sorted = entities.sorted()
                bindings += sorted.map { .text("|" + $0 + "|") }
                let find = dialect == .sqlite ? "instr" : "strpos"
                conditions.append("(" + sorted.map { _ in "\(find)(Z_ENTITIES, ?) > 0" }.joined(separator: " OR ") + ")")
            }
        }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), bindings)
    }
}
