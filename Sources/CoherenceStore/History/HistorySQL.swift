/// The SQL of a SQLite store's persistent history: one row per transaction in
/// `Z_HISTORYTRANSACTION` (its changes encoded by ``HistoryCoding`` in `Z_CHANGES`), and in
/// `Z_HISTORYSTATE` the highest transaction number ever deleted, so that numbers are never
/// reused and a fetch after a deleted transaction is known to be incomplete.
package enum HistorySQL {
    /// The table of history transactions, one row each.
    package static let transactionTable = "Z_HISTORYTRANSACTION"

    static let createTables = [
        """
        CREATE TABLE IF NOT EXISTS Z_HISTORYTRANSACTION (Z_PK INTEGER PRIMARY KEY, Z_TIMESTAMP REAL NOT NULL, \
        Z_AUTHOR TEXT, Z_CONTEXTNAME TEXT, Z_PROCESSID TEXT NOT NULL, Z_ENTITIES TEXT NOT NULL, \
        Z_CHANGECOUNT INTEGER NOT NULL, Z_CHANGES BLOB NOT NULL)
        """,
        "CREATE TABLE IF NOT EXISTS Z_HISTORYSTATE (Z_KEY INTEGER PRIMARY KEY NOT NULL, Z_DELETEDTHROUGH INTEGER NOT NULL)",
        "INSERT OR IGNORE INTO Z_HISTORYSTATE (Z_KEY, Z_DELETEDTHROUGH) VALUES (1, 0)"
    ]

    static let tableExists = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'Z_HISTORYTRANSACTION'"

    /// The last number handed out: the highest remaining, or the highest deleted.
    static let lastNumber =
        "max(coalesce((SELECT max(Z_PK) FROM Z_HISTORYTRANSACTION), 0), coalesce((SELECT Z_DELETEDTHROUGH FROM Z_HISTORYSTATE WHERE Z_KEY = 1), 0))"

    static let state = "SELECT coalesce((SELECT Z_DELETEDTHROUGH FROM Z_HISTORYSTATE WHERE Z_KEY = 1), 0), \(lastNumber)"

    /// Appends a transaction numbered one above the last number (read inside the write
    /// transaction, so concurrent writers in other processes never share a number). Bound:
    /// timestamp, author, context name, entities column, change count, changes. This process's
    /// ID is part of the text (it never changes), so no save binds (and SQLite copies) it.
    static let insert = """
        INSERT INTO Z_HISTORYTRANSACTION (Z_PK, Z_TIMESTAMP, Z_AUTHOR, Z_CONTEXTNAME, Z_PROCESSID, Z_ENTITIES, Z_CHANGECOUNT, Z_CHANGES) \
        VALUES (\(lastNumber) + 1, ?, ?, ?, \(literal(HistoryTransactionRecord.processID)), ?, ?, ?)
        """

    /// `text` as an SQL string literal.
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    static let noteDeleted = "UPDATE Z_HISTORYSTATE SET Z_DELETEDTHROUGH = max(Z_DELETEDTHROUGH, ?) WHERE Z_KEY = 1"

    /// The WHERE clause of a query and its bound values.
    static func filter(_ q: HistoryQuery) -> (sql: String, bindings: [StoredValue]) {
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
        if let authors = q.authors { conditions.append(authors.isEmpty ? "0" : "Z_AUTHOR IN " + list(authors)) }
        if !q.excludedAuthors.isEmpty { conditions.append("(Z_AUTHOR IS NULL OR Z_AUTHOR NOT IN " + list(q.excludedAuthors) + ")") }
        if let names = q.contextNames { conditions.append(names.isEmpty ? "0" : "Z_CONTEXTNAME IN " + list(names)) }
        if let entities = q.entityNames {
            if entities.isEmpty {
                conditions.append("0")
            } else {
                let sorted = entities.sorted()
                bindings += sorted.map { .text("|" + $0 + "|") }
                conditions.append("(" + sorted.map { _ in "instr(Z_ENTITIES, ?) > 0" }.joined(separator: " OR ") + ")")
            }
        }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), bindings)
    }
}
