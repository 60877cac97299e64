import Foundation

/// The SQL an ``InferredMigration`` runs besides the schema's own statements, in each dialect:
/// catalog queries (a table's indexes and columns), setting an old table's indexes aside,
/// literals, and inserts that skip duplicates.
extension SQLGenerator {
    /// A SQL literal for a stored value, to be kept in a column of an attribute of `type` (a
    /// PostgreSQL decimal is cast to `NUMERIC`, bytes are `BYTEA`).
    ///
    /// Every value keeps its exact stored form: an infinity is SQLite's overflowing literal
    /// (`9e999`) or PostgreSQL's `'Infinity'::FLOAT8`; a floating-point value SQLite keeps as
    /// bytes (NaN, −0.0) is PostgreSQL's native one; SQLite text with a NUL (which would end the
    /// statement's text) is spelled in hexadecimal.
    package func literal(_ value: StoredValue, type: AttributeType? = nil) -> String {
        if dialect == .postgreSQL, type?.isFloatingPoint == true, let d = value.doubleValue {
            if d.isNaN { return "'NaN'::FLOAT8" }
            if d.isInfinite { return d > 0 ? "'Infinity'::FLOAT8" : "'-Infinity'::FLOAT8" }
            return "'\(d)'::FLOAT8"
        }
        switch value {
        case .null: return "NULL"
        case .integer(let v): return String(v)
        case .real(let v):
            if v.isFinite { return "\(v)" }
            if v.isNaN { return "NULL" }  // (never made: NaN is stored as bytes)
            switch dialect {
            case .sqlite: return v > 0 ? "9e999" : "-9e999"
            case .postgreSQL: return v > 0 ? "'Infinity'::FLOAT8" : "'-Infinity'::FLOAT8"
            }
        case .text(let s):
            if dialect == .sqlite && s.utf8.contains(0) {
                let hex = s.utf8.map { String(format: "%02X", $0) }.joined()
                return "CAST(X'\(hex)' AS TEXT)"
            }
            let quoted = "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
            return dialect == .postgreSQL && type?.kind == .decimal ? "CAST(\(quoted) AS NUMERIC)" : quoted
        case .blob(let d):
            let hex = d.map { String(format: "%02X", $0) }.joined()
            return dialect == .sqlite ? "X'\(hex)'" : "'\\x\(hex)'::BYTEA"
        }
    }

    /// Whether ``literal(_:type:)`` spells `value` as a literal (which SQLite's `ADD COLUMN … DEFAULT`
    /// requires), not as an expression: all but SQLite text with a NUL.
    package func spellsAsLiteral(_ value: StoredValue) -> Bool {
        guard dialect == .sqlite, case .text(let s) = value else { return true }
        return !s.utf8.contains(0)
    }

    /// The first ten groups of rows of `table` with entity numbers `numbers` whose `columns`
    /// (quoted, none NULL) hold the same values, read on `database` and spelled for an error:
    /// `(values) × count`. Rows with a NULL in the columns never clash, as in a unique index.
    package func duplicateGroups(
        in table: String, columns: [String], numbers: String, on database: any MigrationDatabase
    ) throws -> [String] {
        let notNull = columns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
        let sql = """
            SELECT \(columns.map(quotedText).joined(separator: " || ', ' || ")), count(*) FROM \(table) \
            WHERE Z_ENT IN (\(numbers)) AND \(notNull) GROUP BY \(columns.joined(separator: ", ")) HAVING count(*) > 1 LIMIT 10
            """
        return try database.rows(sql, []).map { row -> String in
            guard row.count == 2, case .text(let values) = row[0], case .integer(let count) = row[1] else { return "\(row)" }
            return "(\(values)) × \(count)"
        }
    }

    /// The names of a table's indexes (one parameter: the table's name) that a migration sets
    /// aside when it renames the table: those made by statements (SQLite), every one, its
    /// primary key's included (PostgreSQL, where index names are the schema's).
    var migrationIndexesOfTable: String {
        switch dialect {
        case .sqlite: return "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL"
        case .postgreSQL:
            return """
                SELECT i.relname::TEXT FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid \
                WHERE t.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema()) AND t.relname = ?
                """
        }
    }

    /// Sets aside an index of a table a migration renamed, so that the new table's index can
    /// take its name: SQLite drops it, PostgreSQL renames it (a primary key's index cannot be
    /// dropped; it goes with the old table).
    func setAsideIndex(_ name: String, prefix: String) -> String {
        switch dialect {
        case .sqlite: return "DROP INDEX \(dialect.quote(name))"
        case .postgreSQL: return "ALTER INDEX \(dialect.quote(name)) RENAME TO \(dialect.quote(prefix + name))"
        }
    }

    /// The names of a table's columns (one parameter: the table's name).
    var migrationColumnsOfTable: String {
        switch dialect {
        case .sqlite: return "SELECT name FROM pragma_table_info(?)"
        case .postgreSQL:
            return "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?"
        }
    }

    /// Every index made by a `CREATE INDEX` statement, with its table's name (not primary keys).
    var migrationCreatedIndexes: String {
        switch dialect {
        case .sqlite: return "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        case .postgreSQL:
            return """
                SELECT i.relname::TEXT, t.relname::TEXT FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid \
                JOIN pg_class t ON t.oid = x.indrelid WHERE t.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema()) AND NOT x.indisprimary
                """
        }
    }

    /// Every index made by a `CREATE INDEX` statement (not primary keys), with what decides
    /// whether it keeps a uniqueness constraint: its name, its table's name, 1 when it is unique
    /// (and, on PostgreSQL, valid), 1 when it is partial (has a `WHERE`), its key columns in
    /// order, joined by commas (an expression is an empty name), and the text that makes it
    /// (SQLite: its `CREATE INDEX` statement; PostgreSQL: its `WHERE` condition as the server
    /// writes it back, NULL for a whole index).
    var migrationIndexShapes: String {
        switch dialect {
        case .sqlite:
            return """
                SELECT m.name, m.tbl_name, l."unique", l.partial, \
                (SELECT group_concat(coalesce(c.name, ''), ',') FROM (SELECT name FROM pragma_index_info(m.name) ORDER BY seqno) AS c), \
                m.sql FROM sqlite_master m JOIN pragma_index_list(m.tbl_name) l ON l.name = m.name \
                WHERE m.type = 'index' AND m.sql IS NOT NULL
                """
        case .postgreSQL:
            return """
                SELECT i.relname::TEXT, t.relname::TEXT, \
                (CASE WHEN x.indisunique AND x.indisvalid THEN 1 ELSE 0 END)::BIGINT, \
                (CASE WHEN x.indpred IS NULL THEN 0 ELSE 1 END)::BIGINT, \
                coalesce((SELECT string_agg(coalesce(a.attname::TEXT, ''), ',' ORDER BY k.n) \
                FROM unnest(x.indkey::INT2[]) WITH ORDINALITY AS k(attnum, n) \
                LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum AND k.attnum > 0 \
                WHERE k.n <= x.indnkeyatts), ''), \
                pg_get_expr(x.indpred, x.indrelid) \
                FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid \
                WHERE t.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema()) AND NOT x.indisprimary
                """
        }
    }

    /// Inserts the rows of `select` into `columns` of `table`, leaving out those whose key is
    /// there already.
    func insertSkippingDuplicates(into table: String, columns: String, select: String) -> String {
        switch dialect {
        case .sqlite: return "INSERT OR IGNORE INTO \(table) (\(columns)) \(select)"
        case .postgreSQL: return "INSERT INTO \(table) (\(columns)) \(select) ON CONFLICT DO NOTHING"
        }
    }

    /// A value as SQL text for a message (`'Oslo'`, `NULL`).
    func quotedText(_ expression: String) -> String {
        switch dialect {
        case .sqlite: return "quote(\(expression))"
        case .postgreSQL: return "quote_nullable(\(expression))"
        }
    }
}

/// The statements that copy a PostgreSQL store's schema for a staged migration and put the copy
/// in its place (see the Migrations guide).
extension SQLGenerator {
    /// Deletes a metadata entry (one parameter: its key).
    package var deleteMetadata: String { "DELETE FROM Z_METADATA WHERE Z_KEY = ?" }

    /// The tables of a schema (one parameter: the schema's name).
    package var schemaTables: String {
        "SELECT table_name::TEXT FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE' ORDER BY 1"
    }

    /// The primary-key, unique and foreign-key constraints of a schema's tables (one parameter:
    /// the schema's name): table, name and definition (names of the schema's tables unqualified
    /// when the schema is the connection's search path), keys before the foreign keys that need
    /// them.
    package var schemaConstraints: String {
        """
        SELECT c.relname::TEXT, con.conname::TEXT, pg_get_constraintdef(con.oid) FROM pg_constraint con \
        JOIN pg_class c ON c.oid = con.conrelid WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?) \
        AND con.contype IN ('p', 'u', 'f') ORDER BY con.contype = 'f', 1, 2
        """
    }

    /// The statements that make the indexes of a schema's tables that no constraint owns (one
    /// parameter: the schema's name; tables unqualified when it is the connection's search path:
    /// the pretty form, as the plain one always names the table's schema).
    package var schemaIndexDefinitions: String {
        """
        SELECT pg_get_indexdef(x.indexrelid, 0, true) FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid \
        WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = ?) AND NOT EXISTS \
        (SELECT 1 FROM pg_constraint con WHERE con.conindid = x.indexrelid AND con.contype IN ('p', 'u', 'x')) ORDER BY 1
        """
    }

    /// Drops a schema and everything in it, when it exists.
    package func dropSchema(_ schema: String) -> String { "DROP SCHEMA IF EXISTS \(dialect.quote(schema)) CASCADE" }

    /// Makes a schema.
    package func createSchema(_ schema: String) -> String { "CREATE SCHEMA \(dialect.quote(schema))" }

    /// Renames a schema.
    package func renameSchema(_ schema: String, to name: String) -> String {
        "ALTER SCHEMA \(dialect.quote(schema)) RENAME TO \(dialect.quote(name))"
    }

    /// Sets the schema unqualified names are looked up in, until the transaction ends.
    package func setLocalSearchPath(_ schema: String) -> String { "SET LOCAL search_path TO \(dialect.quote(schema))" }

    /// Makes `table` in `copy` with the columns (types, collations, defaults) of the same table
    /// in `schema`, and copies its rows.
    package func copyTable(_ table: String, from schema: String, to copy: String) -> [String] {
        let source = dialect.quote(schema) + "." + dialect.quote(table), target = dialect.quote(copy) + "." + dialect.quote(table)
        return ["CREATE TABLE \(target) (LIKE \(source) INCLUDING DEFAULTS)", "INSERT INTO \(target) SELECT * FROM \(source)"]
    }

    /// Adds a constraint (its definition as the catalog gives it) to a table.
    package func addConstraint(_ name: String, to table: String, definition: String) -> String {
        "ALTER TABLE \(dialect.quote(table)) ADD CONSTRAINT \(dialect.quote(name)) \(definition)"
    }

    /// Keeps other clients from writing to `tables` of `schema` until the transaction ends
    /// (they can still read).
    package func lockAgainstWrites(_ tables: [String], in schema: String) -> String {
        "LOCK TABLE " + tables.map { dialect.quote(schema) + "." + dialect.quote($0) }.joined(separator: ", ") + " IN SHARE MODE"
    }

    /// How long a statement waits for another client's lock, until the transaction ends.
    package func setLocalLockTimeout(_ duration: String) -> String { "SET LOCAL lock_timeout = '\(duration)'" }

    /// Takes a lock (one parameter: its name) that another client's same call waits for, until
    /// released or the session ends.
    package var takeSessionLock: String { "SELECT pg_advisory_lock(hashtext(?))" }

    /// Releases a lock taken by ``takeSessionLock`` (one parameter: its name).
    package var releaseSessionLock: String { "SELECT pg_advisory_unlock(hashtext(?))" }
}
