/// An error reported by PostgreSQL or by libpq, its client library.
///
/// Carries the SQLSTATE code (nil when the error did not come from the server: the connection
/// failed, or the client refused a value), the message and the SQL that failed. Bound values and
/// the connection's password are never part of it, so logging an error cannot leak them: the
/// location is the connection URL without its password.
///
/// Coherence's API never throws it directly: it throws a `CoherenceError` naming the store and
/// the SQL, with the `PostgreSQLError` in `CoherenceError.underlyingErrors`.
///
/// ```swift
/// do {
///     try context.save()
/// } catch let error where error.code == .storeWriteFailed {
///     let postgres = error.underlyingErrors.lazy.compactMap { $0 as? PostgreSQLError }.first
///     print(postgres?.sqlState ?? "no SQLSTATE", postgres?.message ?? "")
/// }
/// ```
public struct PostgreSQLError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The five-character SQLSTATE (`23505` for a unique violation, `40001` for a serialization
    /// failure, …), or nil for an error of the client or the connection.
    public let sqlState: String?
    /// The server's or libpq's message (the password of the connection removed).
    public let message: String
    /// The SQL statement that failed, if any (never with bound values).
    public let sql: String?
    /// The connection URL without its password, if known.
    public let location: String?

    /// Creates an error.
    public init(sqlState: String? = nil, message: String, sql: String? = nil, location: String? = nil) {
        self.sqlState = sqlState
        self.message = message
        self.sql = sql
        self.location = location
    }

    /// The SQLSTATE, the message, and the SQL and location when known.
    public var description: String {
        var s = "PostgreSQL error"
        if let sqlState { s += " \(sqlState)" }
        s += ": \(message)"
        if let sql { s += " — while executing `\(sql)`" }
        if let location { s += " — server \(location)" }
        return s
    }

    /// `23505`: a unique index or constraint was violated.
    public static let uniqueViolation = "23505"
    /// `3F000`: the schema does not exist.
    public static let invalidSchemaName = "3F000"
    /// `42P01`: the table does not exist.
    public static let undefinedTable = "42P01"

    /// `08006`: the connection to the server failed or broke (libpq reports it without a
    /// SQLSTATE; the connection layer gives it this one).
    public static let connectionFailure = "08006"
    /// `57014`: a statement was cancelled, as `statement_timeout` does.
    public static let queryCanceled = "57014"
    /// `55P03`: a lock was not granted in time (`lock_timeout`, `NOWAIT`).
    public static let lockNotAvailable = "55P03"

    /// Whether this is a unique violation (SQLSTATE `23505`).
    public var isUniqueViolation: Bool { sqlState == Self.uniqueViolation }

    /// Whether the connection to the server was lost: a connection exception (SQLSTATE class
    /// `08`) or the server shutting down or ending the session (`57P01`, `57P02`, `57P03`).
    public var isConnectionLoss: Bool {
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// Whether a statement or lock timeout ended the statement (SQLSTATE `57014` or `55P03`).
    public var isTimeout: Bool { sqlState == Self.queryCanceled || sqlState == Self.lockNotAvailable }
}
