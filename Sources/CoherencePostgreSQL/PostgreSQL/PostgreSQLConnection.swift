import CCoherencePostgreSQL
import Foundation

/// One connection to a PostgreSQL server through libpq.
///
/// Statements with parameters are prepared once per connection (`PQprepare`, named by a
/// counter) and run with `PQexecPrepared`; their SQL uses `$1`, `$2`, … placeholders. Values
/// cross as text (bytes as binary) and come back as ``StoredValue``s read by column type.
/// Every error is a ``PostgreSQLError`` with the SQLSTATE, the message and the SQL, never the
/// bound values or the password.
final class PostgreSQLConnection: @unchecked Sendable {
    // @unchecked Sendable: a connection is used by one thread at a time (its owner takes it out
    // of a pool under a lock, or holds the coordinator's save lock); libpq allows that.

    /// The libpq connection. Invariant: a live `PGconn` from `PQconnectdbParams` until `close()`
    /// (or `deinit`) finishes it once and sets it to nil.
    private var handle: OpaquePointer?
    let configuration: PostgreSQLConfiguration
    /// Prepared statements by SQL and parameter types: their names on this connection.
    private var prepared: [StatementKey: String] = [:]

    /// A statement as prepared: its SQL and its parameters' types.
    private struct StatementKey: Hashable {
        let sql: String
        let types: [UInt32]
    }

    /// Connects and sets the search path to the configuration's schema (which need not exist).
    /// - Throws: a ``PostgreSQLError`` with libpq's message (no SQLSTATE) when the server cannot
    ///   be reached or refuses the connection.
    init(_ configuration: PostgreSQLConfiguration) throws(PostgreSQLError) {
        self.configuration = configuration
        let keys = configuration.parameters.map(\.key) + ["client_encoding"]
        let values = configuration.parameters.map(\.value) + ["UTF8"]
        let connection = Self.connect(keys: keys, values: values)
        handle = connection
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = connection.map { Self.message(PQerrorMessage($0)) } ?? "libpq could not allocate a connection."
            close()
            throw PostgreSQLError(
                sqlState: PostgreSQLError.connectionFailure, message: configuration.redacting("Cannot connect to the server: \(message)"),
                location: configuration.redactedURL)
        }
        // Notices (e.g. "schema … does not exist, skipping") go nowhere: libpq would print them
        // on standard error.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        try execute("SET search_path TO \(SQLDialect.postgreSQL.quote(configuration.schema))")
        for setting in configuration.settings {
            try execute("SELECT set_config($1, $2, false)", [.text(setting.name), .text(setting.value)])
        }
    }

    deinit { close() }

    /// Finishes the connection (later calls fail).
    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared.removeAll()
    }

    /// Whether the connection is open and healthy.
    var isOpen: Bool { handle.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// Whether a transaction is open on the connection (failed ones included).
    var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Whether a transaction is open on the connection and has not failed.
    var isInHealthyTransaction: Bool { handle.map { PQtransactionStatus($0) == PQTRANS_INTRANS } ?? false }

    /// Runs SQL without parameters, as one or more statements (`PQexec`).
    @discardableResult
    func execute(_ sql: String) throws(PostgreSQLError) -> PostgreSQLResult {
        let connection = try open(sql)
        roundTrips += 1
        return try read(PQexec(connection, sql), sql: sql)
    }

    /// Runs one statement with parameters (`$1`, `$2`, …), prepared on first use.
    @discardableResult
    func execute(_ sql: String, _ parameters: [StoredValue]) throws(PostgreSQLError) -> PostgreSQLResult {
        let connection = try open(sql)
        let converted = try convert(parameters, sql: sql)
        let name = try preparedName(sql, converted, on: connection)
        roundTrips += 1
        let result = Self.withParameters(converted) { values, lengths, formats in
            PQexecPrepared(connection, name, Int32(converted.count), values, lengths, formats, 0)
        }
        return try read(result, sql: sql)
    }

    /// Runs statements with parameters in one pipeline (libpq's pipeline mode): all are sent,
    /// then all results read, so the batch costs one round trip to the server instead of one per
    /// statement. The results are in the statements' order. When a statement fails, the ones
    /// after it do not run (the server skips them) and the first error is thrown; inside a
    /// transaction, the transaction has then failed.
    ///
    /// Send batches of a few hundred statements: the server's replies wait in the socket's buffer
    /// until they are read.
    func executePipelined(_ statements: [(sql: String, parameters: [StoredValue])]) throws(PostgreSQLError) -> [PostgreSQLResult] {
        guard let first = statements.first else { return [] }
        if statements.count == 1 { return [try execute(first.sql, first.parameters)] }
        let connection = try open(first.sql)
        // Conversions and first preparations happen before the pipeline starts.
        var steps: [PipelineStep] = []
        steps.reserveCapacity(statements.count)
        for s in statements {
            let c = try convert(s.parameters, sql: s.sql)
            steps.append(PipelineStep(name: try preparedName(s.sql, c, on: connection), parameters: c, sql: s.sql))
        }
        var results: [PostgreSQLResult] = []
        results.reserveCapacity(steps.count)
        if let error = try pipeline(steps, binary: false, { _, result in results.append(Self.contents(of: result)) }) {
            throw (error as? PostgreSQLError) ?? failure(first.sql)
        }
        return results
    }

    /// How many times the connection waited for the server (statements run one at a time, and
    /// pipelines), for tests.
    var roundTrips = 0

    /// The parameters as libpq takes them.
    func convert(_ parameters: [StoredValue], sql: String) throws(PostgreSQLError) -> [(
        type: UInt32, bytes: [UInt8]?, binary: Bool
    )] {
        var converted: [(type: UInt32, bytes: [UInt8]?, binary: Bool)] = []
        converted.reserveCapacity(parameters.count)
        for p in parameters {
            do {
                converted.append(try PostgreSQLValue.parameter(p))
            } catch {
                throw PostgreSQLError(sqlState: error.sqlState, message: error.message, sql: sql, location: configuration.redactedURL)
            }
        }
        return converted
    }

    /// The name of `sql` prepared with the parameters' types, prepared now on first use.
    func preparedName(
        _ sql: String, _ converted: [(type: UInt32, bytes: [UInt8]?, binary: Bool)], on connection: OpaquePointer
    ) throws(PostgreSQLError) -> String {
        let types = converted.map(\.type)
        let key = StatementKey(sql: sql, types: types)
        if let existing = prepared[key] { return existing }
        let name = "c\(prepared.count + 1)"
        roundTrips += 1
        _ = try read(PQprepare(connection, name, sql, Int32(types.count), types), sql: sql)
        prepared[key] = name
        return name
    }

    /// The connection's last error, as a ``PostgreSQLError`` about `sql`.
    func failure(_ sql: String) -> PostgreSQLError {
        let message = handle.map { Self.message(PQerrorMessage($0)) } ?? "no connection"
        return PostgreSQLError(
            sqlState: isOpen ? nil : PostgreSQLError.connectionFailure, message: configuration.redacting(message), sql: sql,
            location: configuration.redactedURL)
    }

    /// Forgets the prepared statements (after the schema changed under them).
    func clearStatementCache() {
        if isOpen { _ = try? execute("DEALLOCATE ALL") }
        prepared.removeAll()
    }

    // MARK: libpq calls

    func open(_ sql: String) throws(PostgreSQLError) -> OpaquePointer {
        guard let handle else {
            throw PostgreSQLError(message: "The connection is closed.", sql: sql, location: configuration.redactedURL)
        }
        return handle
    }

    /// Reads a result into Swift values and clears it; a failed result becomes an error.
    private func read(_ result: OpaquePointer?, sql: String) throws(PostgreSQLError) -> PostgreSQLResult {
        let result = try check(result, sql: sql)
        defer { PQclear(result) }
        return Self.contents(of: result)
    }

    /// A successful result's rows and count of changed rows, as Swift values.
    static func contents(of result: OpaquePointer) -> PostgreSQLResult {
        var out = PostgreSQLResult()
        out.affectedRows = Int(String(cString: PQcmdTuples(result))) ?? 0
        let rows = PostgreSQLRows(result)
        guard rows.count > 0, rows.columnCount > 0 else { return out }
        out.rows.reserveCapacity(rows.count)
        for r in 0..<Int32(rows.count) {
            var row: [StoredValue] = []
            row.reserveCapacity(rows.columnCount)
            for c in 0..<Int32(rows.columnCount) { row.append(rows.value(r, c)) }
            out.rows.append(row)
        }
        return out
    }

    /// Runs one statement with parameters (prepared on first use) and hands its rows to `body`
    /// where libpq received them, in binary form (no text to parse), without copying them into a
    /// ``PostgreSQLResult`` first. The result is cleared when `body` returns: `body` must not keep
    /// `rows`.
    func query<T>(_ sql: String, _ parameters: [StoredValue], _ body: (PostgreSQLRows) throws -> T) throws -> T {
        let connection = try open(sql)
        let converted = try convert(parameters, sql: sql)
        let name = try preparedName(sql, converted, on: connection)
        roundTrips += 1
        let result = try check(
            Self.withParameters(converted) { values, lengths, formats in
                PQexecPrepared(connection, name, Int32(converted.count), values, lengths, formats, 1)
            }, sql: sql)
        defer { PQclear(result) }
        return try body(PostgreSQLRows(result, binary: true))
    }

    /// A successful result; a failed one is cleared and thrown as an error.
    func check(_ result: OpaquePointer?, sql: String) throws(PostgreSQLError) -> OpaquePointer {
        guard let result else {
            let message = handle.map { Self.message(PQerrorMessage($0)) } ?? "no connection"
            throw PostgreSQLError(
                sqlState: isOpen ? nil : PostgreSQLError.connectionFailure, message: configuration.redacting(message), sql: sql,
                location: configuration.redactedURL)
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            defer { PQclear(result) }
            // A connection that broke has no SQLSTATE from the server: it is a connection failure.
            let state =
                PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
                ?? (isOpen ? nil : PostgreSQLError.connectionFailure)
            let primary = PQresultErrorField(result, Int32(UInt8(ascii: "M"))).map { String(cString: $0) }
            let message = primary ?? Self.message(PQresultErrorMessage(result))
            throw PostgreSQLError(
                sqlState: state, message: configuration.redacting(message), sql: sql, location: configuration.redactedURL)
        }
        return result
    }

    /// A libpq message without its trailing newline.
    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        return String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Calls `PQconnectdbParams` with NUL-terminated copies of the keywords and values.
    private static func connect(keys: [String], values: [String]) -> OpaquePointer? {
        // Invariant: every pointer is a strdup'd copy, freed after the call returns (libpq copies
        // what it keeps); both arrays end with a NULL, as libpq requires.
        let k = keys.map { strdup($0) }, v = values.map { strdup($0) }
        defer {
            for p in k { free(p) }
            for p in v { free(p) }
        }
        let kp: [UnsafePointer<CChar>?] = k.map { $0.map { UnsafePointer($0) } } + [nil]
        let vp: [UnsafePointer<CChar>?] = v.map { $0.map { UnsafePointer($0) } } + [nil]
        return PQconnectdbParams(kp, vp, 0)
    }

    /// Calls `body` with libpq's parameter arrays: values (NUL-terminated copies, NULL for a
    /// null), lengths and formats (1: binary).
    static func withParameters<T>(
        _ parameters: [(type: UInt32, bytes: [UInt8]?, binary: Bool)],
        _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) -> T
    ) -> T {
        // Invariant: each buffer holds its value's bytes and a NUL, lives until `body` returns,
        // and is freed once here.
        let buffers: [UnsafeMutablePointer<CChar>?] = parameters.map { p in
            guard let bytes = p.bytes else { return nil }
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (i, byte) in bytes.enumerated() { buffer[i] = CChar(bitPattern: byte) }
            buffer[bytes.count] = 0
            return buffer
        }
        defer { for b in buffers { b?.deallocate() } }
        let values = buffers.map { $0.map { UnsafePointer($0) } }
        let lengths = parameters.map { Int32($0.bytes?.count ?? 0) }
        let formats = parameters.map { Int32($0.binary ? 1 : 0) }
        return body(values, lengths, formats)
    }
}

extension PostgreSQLConnection {
    /// The connection's socket (for waiting on notifications), or nil when it is closed.
    var socket: Int32? {
        guard let handle, isOpen else { return nil }
        let s = PQsocket(handle)
        return s >= 0 ? s : nil
    }

    /// Reads what the server sent and returns the notifications received (`LISTEN`), oldest
    /// first: channel and payload. An empty list and a closed connection when it was lost.
    func notifications() -> [(channel: String, payload: String)] {
        guard let handle else { return [] }
        guard PQconsumeInput(handle) != 0 else { return [] }
        var received: [(channel: String, payload: String)] = []
        while let notify = PQnotifies(handle) {
            // Invariant: `notify` is libpq's allocation, read here and freed once with PQfreemem.
            received.append((String(cString: notify.pointee.relname), String(cString: notify.pointee.extra)))
            PQfreemem(notify)
        }
        return received
    }
}
