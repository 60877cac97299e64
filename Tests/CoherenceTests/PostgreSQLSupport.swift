import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The PostgreSQL server of the tests: `COHERENCE_TEST_POSTGRES_URL` (a database URL such as
/// `postgresql://postgres@/postgres?host=/tmp/pg`; `.ci/postgres start` prints one). Each test's
/// stores live in schemas of their own (``TemporaryDirectory/postgreSQLURL(_:)``).
///
/// Without the variable, the PostgreSQL tests are disabled with a message saying how to start a
/// server — except in CI (`CI` set), where they run and fail, recording that the server is
/// missing.
enum PostgreSQLTestServer {
    static let environmentKey = "COHERENCE_TEST_POSTGRES_URL"
    static let serverURL: String? = ProcessInfo.processInfo.environment[environmentKey].flatMap { $0.isEmpty ? nil : $0 }
    static let isCI = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } ?? false
    /// Whether the PostgreSQL tests run: a server is configured, or CI wants them to fail without one.
    static let enabled = serverURL != nil || isCI
    static let howToStart =
        "PostgreSQL tests need a server: run `eval \"$(.ci/postgres start)\"` (sets \(environmentKey)), then `swift test`; `.ci/postgres stop` ends it."

    /// The store types the store-behaviour tests run on: SQLite, in-memory, and PostgreSQL when
    /// its tests are enabled.
    static let storeTypes: [StoreType] = [.sqlite, .inMemory] + (enabled ? [.postgreSQL] : [])

    /// The server URL with `schema` as the store's schema.
    static func url(schema: String) throws -> URL {
        guard let serverURL else {
            Issue.record("The PostgreSQL server is missing: \(environmentKey) is not set. \(howToStart)")
            throw CoherenceError(.storeOpenFailed, "No PostgreSQL test server (\(environmentKey) is not set).")
        }
        guard var components = URLComponents(string: serverURL) else {
            throw CoherenceError(.storeOpenFailed, "\(environmentKey) is not a URL.")
        }
        var items = (components.queryItems ?? []).filter { $0.name != "schema" }
        items.append(URLQueryItem(name: "schema", value: schema))
        components.queryItems = items
        guard let url = components.url else { throw CoherenceError(.storeOpenFailed, "\(environmentKey) is not a URL.") }
        return url
    }

    /// A connection to the server (its default schema).
    static func connection() throws -> PostgreSQLConnection {
        guard let serverURL, let url = URL(string: serverURL) else {
            throw CoherenceError(.storeOpenFailed, "No PostgreSQL test server (\(environmentKey) is not set).")
        }
        return try PostgreSQLConnection(PostgreSQLConfiguration(url: url))
    }

    /// Drops a test's schema (and everything in it), waiting at most a few seconds for locks.
    static func drop(schema: String) {
        guard let c = try? connection() else { return }
        _ = try? c.execute("SET lock_timeout = '10s'")
        _ = try? c.execute("DROP SCHEMA IF EXISTS \(SQLDialect.postgreSQL.quote(schema)) CASCADE")
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs a test only when the PostgreSQL tests are enabled (see ``PostgreSQLTestServer``).
    static var postgreSQLServer: Self {
        .enabled(if: PostgreSQLTestServer.enabled, Comment(rawValue: PostgreSQLTestServer.howToStart))
    }
}

extension PostgreSQLTestServer {
    /// The schema a store URL names.
    static func schema(of url: URL) -> String {
        URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "schema" }?.value ?? "public"
    }

    /// Whether the server has a schema of that name.
    static func schemaExists(_ schema: String) throws -> Bool {
        try (connection().execute("SELECT count(*) FROM pg_namespace WHERE nspname = $1", [.text(schema)]).firstInteger ?? 0) > 0
    }

    /// Everything a schema holds, as text: its tables with their columns (types, defaults), its
    /// indexes and the rows of each table (to check that a refused migration changed nothing).
    static func dump(schema: String) throws -> String {
        let c = try connection()
        var lines: [String] = []
        let columns = try c.execute(
            """
            SELECT table_name::text || '.' || column_name::text || ' ' || data_type::text || ' ' || coalesce(column_default, '') \
            FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position
            """, [.text(schema)])
        let indexes = try c.execute("SELECT indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname", [.text(schema)])
        let text = { (row: [StoredValue]) in
            row.map { value -> String in
                if case .text(let t) = value { return t }
                return "\(value)"
            }.joined(separator: " | ")
        }
        lines += (columns.rows + indexes.rows).map(text)
        let tables = try c.execute(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1", [.text(schema)])
        for row in tables.rows {
            guard case .text(let table)? = row.first else { continue }
            let q = SQLDialect.postgreSQL.quote
            let rows = try c.execute("SELECT t::text FROM \(q(schema)).\(q(table)) t ORDER BY 1")
            lines.append(table + ": " + rows.rows.map(text).joined(separator: "; "))
        }
        return lines.joined(separator: "\n")
    }
}
