import Foundation

/// The write transactions of a PostgreSQL store on its writer connection (under the
/// coordinator's save lock): a save's, a batch request's, and the short ones of history deletes
/// and progress records.
extension PostgreSQLStore {
    /// Runs `BEGIN` on the writer connection and returns the connection. A connection lost since
    /// its last use (the server restarted) is replaced first: nothing was sent yet, so the
    /// transaction starts again on a new one.
    /// - Throws: `.storeWriteFailed` (as `what`), `.connectionLost`, `.storeNotAttached`.
    func beginWriterTransaction(_ what: String) throws(CoherenceError) -> PostgreSQLConnection {
        var c = try writerConnection()
        do {
            try c.execute("BEGIN")
        } catch {
            guard error.isConnectionLoss else { throw storeError(.storeWriteFailed, error, what) }
            c = try reconnectWriter()
            do {
                try c.execute("BEGIN")
            } catch {
                throw storeError(.storeWriteFailed, error, what)
            }
        }
        return c
    }

    /// Runs `body` in a write transaction of its own, committed when it returns and rolled back
    /// when it throws (a failure reported as `what`).
    func inWriteTransaction<T>(_ what: String, _ body: (PostgreSQLConnection) throws -> T) throws(CoherenceError) -> T {
        let c = try beginWriterTransaction(what)
        do {
            let value = try body(c)
            try c.execute("COMMIT")
            return value
        } catch {
            if c.isInTransaction { _ = try? c.execute("ROLLBACK") }
            throw storeError(.storeWriteFailed, error, what)
        }
    }

    /// Runs a write that a unique index may refuse. With `savepoint` (the table has uniqueness
    /// constraints), it runs inside a savepoint, and a refusal rolls back to it and returns nil
    /// (the transaction goes on: a failed statement would end it). Without, it just runs.
    func executeRefusable(
        _ sql: String, _ parameters: [StoredValue], on c: PostgreSQLConnection, savepoint: Bool
    ) throws(PostgreSQLError) -> PostgreSQLResult? {
        guard savepoint else { return try c.execute(sql, parameters) }
        try c.execute("SAVEPOINT coherence_write")
        let result: PostgreSQLResult
        do {
            result = try c.execute(sql, parameters)
        } catch {
            guard error.isUniqueViolation else { throw error }
            try c.execute("ROLLBACK TO SAVEPOINT coherence_write")
            return nil
        }
        try c.execute("RELEASE SAVEPOINT coherence_write")
        return result
    }

    /// The destinations in rows of ``SQLGenerator/selectRelated(_:)`` (source key, destination
    /// key, destination entity number), by source key.
    static func relatedKeys(_ rows: [[StoredValue]]) -> RelatedKeys {
        var related: RelatedKeys = [:]
        for r in rows {
            guard r.count >= 3, case .integer(let source) = r[0], case .integer(let key) = r[1], case .integer(let n) = r[2] else {
                continue
            }
            related[source, default: []].append((key, Int(n)))
        }
        return related
    }
}
