import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The libpq layer: URLs, connections, parameters and results, errors (never with a password).
@Suite struct PostgreSQLLayerTests {
    @Test func urlParts() throws {
        let url = try #require(URL(string: "postgresql://app:pa%3Ass@db.example:6543/shop?schema=tenant_1&sslmode=disable"))
        let c = try PostgreSQLConfiguration(url: url)
        #expect(c.schema == "tenant_1")
        #expect(c.password == "pa:ss")
        let parameters = Dictionary(uniqueKeysWithValues: c.parameters.map { ($0.key, $0.value) })
        #expect(
            parameters == ["user": "app", "password": "pa:ss", "host": "db.example", "port": "6543", "dbname": "shop", "sslmode": "disable"]
        )
        #expect(c.redactedURL == "postgresql://app@db.example:6543/shop?schema=tenant_1&sslmode=disable")
    }

    @Test func unixSocketAndDefaultSchema() throws {
        let c = try PostgreSQLConfiguration(url: try #require(URL(string: "postgres://me@/db?host=/tmp/pg")))
        #expect(c.schema == "public")
        #expect(c.parameters.contains { $0.key == "host" && $0.value == "/tmp/pg" })
        #expect(c.parameters.contains { $0.key == "dbname" && $0.value == "db" })
    }

    @Test func badURLsAreTypedErrorsWithoutThePassword() throws {
        for text in ["mysql://u:hunter2secret@h/db", "postgresql://u:hunter2secret@h/db?schema="] {
            let url = try #require(URL(string: text))
            let error = #expect(throws: PostgreSQLError.self) { try PostgreSQLConfiguration(url: url) }
            #expect(error?.description.contains("hunter2secret") == false)
            #expect(error?.location?.contains("u@h") == true)
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let error = #expect(throws: CoherenceError.self) {
            try coordinator.addPersistentStore(type: .postgreSQL, at: URL(string: "mysql://u:hunter2secret@h/db"))
        }
        #expect(error?.code == .storeOpenFailed)
        #expect(error.map { "\($0)" }?.contains("hunter2secret") == false)
    }

    /// PostgreSQL cuts names to 63 bytes: a longer schema name is refused, so that two names
    /// sharing their first 63 bytes cannot open one store.
    @Test func schemaNamesLongerThanPostgreSQLsLimitAreRefused() throws {
        let prefix = String(repeating: "x", count: 60)
        #expect(
            try PostgreSQLConfiguration(url: try #require(URL(string: "postgresql://u@h/db?schema=\(prefix)abc"))).schema.utf8.count == 63)
        for name in [prefix + "_tenant_alice", prefix + "é_b"] {
            var components = try #require(URLComponents(string: "postgresql://u@h/db"))
            components.queryItems = [URLQueryItem(name: "schema", value: name)]
            let url = try #require(components.url)
            let error = #expect(throws: PostgreSQLError.self) { try PostgreSQLConfiguration(url: url) }
            #expect(error?.message.contains("at most 63") == true)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
            #expect(throws: CoherenceError.self) { try coordinator.addPersistentStore(type: .postgreSQL, at: url) }
        }
    }

    /// Openers racing to make a new schema all open it (the schema is made once).
    @Test(.postgreSQLServer) func concurrentFirstOpenersOfANewSchemaAllOpenIt() throws {
        let dir = try TemporaryDirectory()
        let model = try makeTestModel()
        for round in 0..<4 {
            let url = try dir.postgreSQLURL("race\(round)")
            let failures = LockedValue<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do {
                    let c = PersistentStoreCoordinator(managedObjectModel: model)
                    try c.addPersistentStore(type: .postgreSQL, at: url)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        }
    }

    /// A server that cannot be reached: the error names the server, never the password.
    @Test func unreachableServerErrorHasNoPassword() throws {
        let url = try #require(
            URL(string: "postgresql://nobody:hunter2secret@/db?host=/nonexistent-coherence-socket-dir&connect_timeout=2"))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let error = #expect(throws: CoherenceError.self) { try coordinator.addPersistentStore(type: .postgreSQL, at: url) }
        #expect(error?.code == .storeOpenFailed)
        let text = error.map { "\($0)" } ?? ""
        #expect(!text.contains("hunter2secret"))
        #expect(text.contains("nonexistent-coherence-socket-dir"))
        #expect(error?.underlyingErrors.contains { $0 is PostgreSQLError } == true)
    }

    /// With a server (trust authentication accepts any password): the attached store's URL,
    /// description and errors leave the password out.
    @Test(.postgreSQLServer) func attachedStoreShowsNoPassword() throws {
        let dir = try TemporaryDirectory()
        var components = try #require(URLComponents(url: try dir.postgreSQLURL(), resolvingAgainstBaseURL: false))
        components.password = "hunter2secret"
        let url = try #require(components.url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let store = try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        #expect(store.type == .postgreSQL)
        #expect(store.url?.absoluteString.contains("hunter2secret") == false)
        #expect(!store.description.contains("hunter2secret"))
        #expect(store.engine.locationDescription.contains("hunter2secret") == false)
        let again = #expect(throws: CoherenceError.self) { try coordinator.addPersistentStore(type: .postgreSQL, at: url) }
        #expect(again?.code == .alreadyAttached)
        #expect(again.map { "\($0)" }?.contains("hunter2secret") == false)
        try coordinator.remove(store)
    }

    @Test(.postgreSQLServer) func parametersAndResultsRoundTrip() throws {
        let c = try PostgreSQLTestServer.connection()
        let values: [StoredValue] = [
            .integer(.min), .integer(42), .real(1.5), .real(5e-324), .real(-.infinity), .text("héllo 🎉"), .text(""),
            .blob(Data([0, 1, 0xFF])), .blob(Data()), .null
        ]
        let result = try c.execute(
            "SELECT $1::BIGINT, $2::BIGINT, $3::FLOAT8, $4::FLOAT8, $5::FLOAT8, $6::TEXT, $7::TEXT, $8::BYTEA, $9::BYTEA, $10::TEXT", values
        )
        #expect(result.rows.count == 1)
        #expect(result.rows.first == values)
        // NaN and −0.0 come back in their stored form.
        let special = try c.execute("SELECT $1::FLOAT8, $2::FLOAT8", [.real(.nan), .real(-0.0)])
        #expect(special.rows.first == [StoredValue(double: .nan), StoredValue(double: -0.0)])
    }

    @Test(.postgreSQLServer) func errorsCarrySQLStateAndSQLButNoValues() throws {
        let c = try PostgreSQLTestServer.connection()
        let sql = "SELECT * FROM coherence_no_such_table WHERE x = $1"
        let error = #expect(throws: PostgreSQLError.self) { try c.execute(sql, [.text("secret-value")]) }
        #expect(error?.sqlState == PostgreSQLError.undefinedTable)
        #expect(error?.sql == sql)
        #expect(error?.description.contains("secret-value") == false)
        // Text with a NUL cannot be sent: a typed error, not a truncated value.
        let nul = #expect(throws: PostgreSQLError.self) { try c.execute("SELECT $1::TEXT", [.text("a\u{0}b")]) }
        #expect(nul?.sqlState == "22021")
    }
}
