import CCoherencePostgreSQL
import Foundation

/// One statement of a pipeline: its prepared name on the connection, its parameters as libpq
/// takes them, and its SQL (for errors).
struct PipelineStep {
    let name: String
    let parameters: [(type: UInt32, bytes: [UInt8]?, binary: Bool)]
    let sql: String
}

extension PostgreSQLConnection {
    /// The cursor ``query(_:_:chunkSize:chunks:_:)`` reads through (closed before it returns).
    static let cursorName = "coherence_rows"

    /// Sends `steps` in one pipeline (libpq's pipeline mode), then reads their results in order,
    /// handing each successful one to `each` (its index and the result, cleared when `each`
    /// returns) as soon as it has arrived: the server works on the next statements meanwhile.
    ///
    /// Returns the first error (a statement's, or one `each` threw) once every result has been
    /// read, so that the connection is in step with the server again. When a statement fails,
    /// the ones after it do not run (the server skips them); inside a transaction, the
    /// transaction has then failed.
    /// - Throws: a connection failure when the connection fell out of step with the server (it is
    ///   closed then).
    func pipeline(_ steps: [PipelineStep], binary: Bool, _ each: (Int, OpaquePointer) throws -> Void) throws(PostgreSQLError) -> (
        any Error
    )? {
        guard let first = steps.first else { return nil }
        let connection = try open(first.sql)
        guard PQenterPipelineMode(connection) == 1 else { throw failure(first.sql) }
        roundTrips += 1
        var sent = 0
        for step in steps {
            let queued = Self.withParameters(step.parameters) { values, lengths, formats in
                PQsendQueryPrepared(connection, step.name, Int32(step.parameters.count), values, lengths, formats, binary ? 1 : 0)
            }
            guard queued == 1 else { break }
            sent += 1
        }
        var firstError: (any Error)?
        // In sync with the server: each statement's result, then a NULL; then the sync's.
        var inSync = PQpipelineSync(connection) == 1
        for i in 0..<sent where inSync {
            guard let result = PQgetResult(connection) else {
                inSync = false
                break
            }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                PQclear(result)
            } else {
                do throws(PostgreSQLError) {
                    let checked = try check(result, sql: steps[i].sql)
                    defer { PQclear(checked) }
                    if firstError == nil {
                        do { try each(i, checked) } catch { firstError = error }
                    }
                } catch {
                    if firstError == nil { firstError = error }
                }
            }
            if let extra = PQgetResult(connection) {
                PQclear(extra)
                inSync = false
            }
        }
        if inSync, let sync = PQgetResult(connection) {
            inSync = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
            PQclear(sync)
        } else {
            inSync = false
        }
        // A connection out of step with the server cannot be used again.
        guard inSync, PQexitPipelineMode(connection) == 1 else {
            let message = (firstError as? PostgreSQLError)?.message ?? failure(first.sql).message
            let sql = (firstError as? PostgreSQLError)?.sql ?? first.sql
            close()
            throw PostgreSQLError(
                sqlState: PostgreSQLError.connectionFailure, message: message, sql: sql, location: configuration.redactedURL)
        }
        if firstError == nil && sent < steps.count { return failure(steps[sent].sql) }
        return firstError
    }

    /// Runs a SELECT (with parameters, `$1`, `$2`, …) through a cursor and hands its rows to
    /// `body` in chunks, each as soon as it has arrived (in binary form, as
    /// ``query(_:_:_:)`` does): the cursor's declaration, `chunks - 1` fetches of `chunkSize` rows
    /// and a last fetch of the rest go to the server in one pipeline, so the server produces the
    /// next chunks while `body` works on this one. Outside a transaction, the cursor lives in one
    /// of its own (`READ COMMITTED`: the rows are those of one snapshot, as for one statement);
    /// inside one (a query generation's snapshot), in that transaction, and it is closed after.
    ///
    /// `body` must not keep the rows. When a statement or `body` fails, the first error is thrown
    /// once every result has been read; the transaction of its own is rolled back.
    func query(
        _ sql: String, _ parameters: [StoredValue], chunkSize: Int, chunks: Int, _ body: (PostgreSQLRows) throws -> Void
    ) throws {
        let connection = try open(sql)
        let ownsTransaction = !isInTransaction
        let cursor = Self.cursorName
        let declare = "DECLARE \(cursor) NO SCROLL CURSOR FOR \(sql)"
        // Errors of every step name the query (a failed FETCH is the query's failure).
        func step(_ text: String, _ converted: [(type: UInt32, bytes: [UInt8]?, binary: Bool)] = []) throws(PostgreSQLError)
            -> PipelineStep
        {
            PipelineStep(name: try preparedName(text, converted, on: connection), parameters: converted, sql: declare)
        }
        var steps: [PipelineStep] = []
        if ownsTransaction { steps.append(try step("BEGIN")) }
        steps.append(try step(declare, try convert(parameters, sql: declare)))
        let firstFetch = steps.count
        let fetch = try step("FETCH FORWARD \(max(1, chunkSize)) FROM \(cursor)")
        for _ in 1..<max(2, chunks) { steps.append(fetch) }
        steps.append(try step("FETCH ALL FROM \(cursor)"))
        let lastFetch = steps.count - 1
        steps.append(try step(ownsTransaction ? "COMMIT" : "CLOSE \(cursor)"))
        let error = try pipeline(steps, binary: true) { i, result in
            if i >= firstFetch && i <= lastFetch { try body(PostgreSQLRows(result, binary: true)) }
        }
        guard let error else { return }
        // A failed statement, or `body`, stopped the pipeline's transaction (COMMIT of a failed
        // transaction rolls back; after an error in `body` it may have committed a read).
        if ownsTransaction && isInTransaction { _ = try? execute("ROLLBACK") }
        throw error
    }
}
