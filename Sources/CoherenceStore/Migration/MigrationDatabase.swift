import Foundation

/// The database an ``InferredMigration`` runs on, inside the caller's transaction: a SQLite
/// connection (``SQLiteMigrationDatabase``) or another store's (the PostgreSQL store adapts its
/// connection). The SQL it is given comes from ``SQLGenerator`` in the database's dialect, with
/// `?` placeholders.
package protocol MigrationDatabase {
    /// Runs one statement with `parameters` bound to its placeholders, in order.
    /// - Returns: the number of rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ sql: String, _ parameters: [StoredValue]) throws -> Int
    /// The rows of a query with `parameters` bound to its placeholders, in order.
    func rows(_ sql: String, _ parameters: [StoredValue]) throws -> [[StoredValue]]
}

extension MigrationDatabase {
    /// Runs one statement without parameters.
    @discardableResult
    package func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    /// The first column of a query's first row as an integer (0 when there is none).
    package func integer(_ sql: String, _ parameters: [StoredValue] = []) throws -> Int64 {
        guard let first = try rows(sql, parameters).first?.first, case .integer(let value) = first else { return 0 }
        return value
    }

    /// The first column of every row of a query, as text.
    package func texts(_ sql: String, _ parameters: [StoredValue] = []) throws -> [String] {
        try rows(sql, parameters).compactMap { row in
            guard let first = row.first, case .text(let text) = first else { return nil }
            return text
        }
    }
}

/// A SQLite connection as a ``MigrationDatabase``.
package struct SQLiteMigrationDatabase: MigrationDatabase {
    package let connection: SQLiteConnection

    package init(_ connection: SQLiteConnection) { self.connection = connection }

    package func execute(_ sql: String, _ parameters: [StoredValue]) throws -> Int {
        if parameters.isEmpty {
            try connection.execute(sql)
        } else {
            let statement = try connection.prepare(sql)
            statement.bind(parameters)
            try statement.execute()
        }
        return connection.changes
    }

    package func rows(_ sql: String, _ parameters: [StoredValue]) throws -> [[StoredValue]] {
        let statement = try connection.prepare(sql)
        statement.bind(parameters)
        return try statement.rows { s in (0..<s.columnCount).map { s.value($0) } }
    }
}
