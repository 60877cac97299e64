import BenchmarkSupport
import Foundation
import Logging
import PostgresNIO

// PostgresNIO (1.33.2): one `PostgresConnection`, queries with interpolated (bound) values,
// rows decoded into tuples. Dates are `timestamptz`, as PostgresNIO encodes them.

let quietLogger: Logger = {
    var logger = Logger(label: "coherence-pg-benchmarks")
    logger.logLevel = .error
    return logger
}()

extension Server {
    /// PostgresNIO's configuration for this server.
    var nioConfiguration: PostgresConnection.Configuration {
        if let socketDirectory {
            return .init(unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        }
        return .init(host: host, port: port, username: user, password: password, database: database, tls: .disable)
    }
}

/// A PostgresNIO connection with `schema` as its search path.
func nioConnection(_ server: Server, schema: String) async throws -> PostgresConnection {
    let connection = try await PostgresConnection.connect(configuration: server.nioConfiguration, id: 1, logger: quietLogger)
    try await connection.query(PostgresQuery(unsafeSQL: "SET search_path TO \(schema)"), logger: quietLogger)
    return connection
}

enum NIOSide {
    static func insert(_ c: PostgresConnection, _ i: Int, _ n: Int, town: Int? = nil) async throws {
        try await c.query(
            """
            INSERT INTO person (id, name, email, age, score, "createdAt", "townId") VALUES (\(i), \(Data_.name(i, n)), \(Data_.email(i)), \
            \(Data_.age(i)), \(Data_.score(i)), \(Data_.created(i)), \(town))
            """, logger: quietLogger)
    }

    /// W1: `n` inserts in one transaction.
    static func insertAll(_ c: PostgresConnection, n: Int) async throws {
        try await c.query("BEGIN", logger: quietLogger)
        for i in 0..<n { try await insert(c, i, n) }
        try await c.query("COMMIT", logger: quietLogger)
    }

    /// W2: every person, every column.
    static func fetchAll(_ c: PostgresConnection) async throws -> Int {
        var s = 0
        let rows = try await c.query(#"SELECT id, name, email, age, score, "createdAt" FROM person"#, logger: quietLogger)
        for try await (id, name, email, age, score, created) in rows.decode((Int, String, String, Int, Double, Date).self) {
            s &+= id &+ name.utf8.count &+ email.utf8.count &+ age &+ Int(score) &+ Int(created.timeIntervalSinceReferenceDate)
        }
        return s
    }

    /// W3: the range query, 100 times.
    static func range(_ c: PostgresConnection) async throws -> Int {
        var s = 0
        for _ in 0..<100 {
            let rows = try await c.query(
                #"SELECT id, name, email, age, score, "createdAt" FROM person WHERE age BETWEEN \#(30) AND \#(40) ORDER BY name LIMIT \#(1000)"#,
                logger: quietLogger)
            for try await (_, name, _, _, _, _) in rows.decode((Int, String, String, Int, Double, Date).self) { s &+= name.utf8.count }
        }
        return s
    }

    /// W4: `k` updates in one transaction.
    static func changeScores(_ c: PostgresConnection, k: Int, round: Double) async throws {
        try await c.query("BEGIN", logger: quietLogger)
        for i in 0..<k { try await c.query("UPDATE person SET score = \(round + Double(i)) WHERE id = \(i)", logger: quietLogger) }
        try await c.query("COMMIT", logger: quietLogger)
    }

    /// W5: `k` deletes in one transaction.
    static func delete(_ c: PostgresConnection, k: Int) async throws {
        try await c.query("BEGIN", logger: quietLogger)
        for i in 0..<k { try await c.query("DELETE FROM person WHERE id = \(i)", logger: quietLogger) }
        try await c.query("COMMIT", logger: quietLogger)
    }

    /// W6: `k` inserts, each its own transaction.
    static func singleInserts(_ c: PostgresConnection, k: Int) async throws {
        for i in 0..<k { try await insert(c, i, k) }
    }

    /// W7: the towns, then each person's town.
    static func walk(_ c: PostgresConnection) async throws -> Int {
        var towns: [Int: String] = [:]
        for try await (id, name) in try await c.query("SELECT id, name FROM town", logger: quietLogger).decode((Int, String).self) {
            towns[id] = name
        }
        var s = 0
        let rows = try await c.query(#"SELECT id, "townId" FROM person"#, logger: quietLogger)
        for try await (_, town) in rows.decode((Int, Int?).self) { s &+= town.flatMap { towns[$0] }?.utf8.count ?? 0 }
        return s
    }
}
