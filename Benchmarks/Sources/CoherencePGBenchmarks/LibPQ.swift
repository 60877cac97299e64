import BenchmarkSupport
import CBenchLibPQ
import Foundation

/// Hand-written libpq: statements prepared once (`PQprepare`) and run with `PQexecPrepared`,
/// parameters and results as text, as a C program would.
final class RawPG {
    let connection: OpaquePointer

    /// Connects to `server` with `schema` as the search path (made when missing).
    init(_ server: Server, schema: String) throws {
        let k = server.keywords.map { strdup($0.0) }, v = server.keywords.map { strdup($0.1) }
        defer {
            for p in k { free(p) }
            for p in v { free(p) }
        }
        var keys: [UnsafePointer<CChar>?] = k.map { $0.map { UnsafePointer($0) } }
        var values: [UnsafePointer<CChar>?] = v.map { $0.map { UnsafePointer($0) } }
        // A Unix-socket directory is libpq's `host` too.
        let hostKey = strdup("host"), hostValue = strdup(server.socketDirectory ?? "")
        defer {
            free(hostKey)
            free(hostValue)
        }
        if server.socketDirectory != nil {
            keys.append(UnsafePointer(hostKey))
            values.append(UnsafePointer(hostValue))
        }
        keys.append(nil)
        values.append(nil)
        guard let c = PQconnectdbParams(keys, values, 0) else { throw BenchmarkError("libpq: no connection") }
        connection = c
        guard PQstatus(c) == CONNECTION_OK else { throw BenchmarkError("libpq: \(String(cString: PQerrorMessage(c)))") }
        PQsetNoticeProcessor(c, { _, _ in }, nil)
        try exec("CREATE SCHEMA IF NOT EXISTS \(schema); SET search_path TO \(schema)")
    }

    deinit { PQfinish(connection) }

    /// Runs SQL without parameters.
    func exec(_ sql: String) throws {
        let r = PQexec(connection, sql)
        defer { PQclear(r) }
        try check(r, sql)
    }

    func check(_ r: OpaquePointer?, _ sql: String) throws {
        let status = PQresultStatus(r)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw BenchmarkError("\(sql): \(String(cString: PQerrorMessage(connection)))")
        }
    }

    /// Prepares `sql` as `name`.
    func prepare(_ name: String, _ sql: String) throws {
        let r = PQprepare(connection, name, sql, 0, nil)
        defer { PQclear(r) }
        try check(r, sql)
    }

    /// Runs the prepared statement `name` with text parameters; the result, to clear.
    @inline(__always)
    func run(_ name: String, _ parameters: [String?]) throws -> OpaquePointer? {
        // Text parameters as NUL-terminated C strings.
        var copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { for p in copies { free(p) } }
        let r = copies.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { p in
                PQexecPrepared(connection, name, Int32(parameters.count), p, nil, nil, 0)
            }
        }
        try check(r, name)
        return r
    }

    /// Runs the prepared statement `name` and clears the result.
    @inline(__always)
    func step(_ name: String, _ parameters: [String?]) throws {
        PQclear(try run(name, parameters))
    }

    /// Drops and makes the person and town tables.
    func makeTables(dateType: String = "DOUBLE PRECISION") throws {
        try exec(
            """
            DROP TABLE IF EXISTS person; DROP TABLE IF EXISTS town;
            CREATE TABLE town (id BIGINT PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE person (id BIGINT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, age BIGINT NOT NULL,
              score DOUBLE PRECISION NOT NULL, "createdAt" \(dateType) NOT NULL, "townId" BIGINT REFERENCES town(id));
            CREATE INDEX person_age ON person(age);
            CREATE INDEX person_town ON person("townId");
            """)
    }
}

@inline(__always) func text(_ r: OpaquePointer?, _ row: Int32, _ column: Int32) -> String {
    String(cString: PQgetvalue(r, row, column))
}

@inline(__always) func int(_ r: OpaquePointer?, _ row: Int32, _ column: Int32) -> Int {
    strtol(PQgetvalue(r, row, column), nil, 10)
}

@inline(__always) func double(_ r: OpaquePointer?, _ row: Int32, _ column: Int32) -> Double {
    strtod(PQgetvalue(r, row, column), nil)
}

/// Inserts `n` people (ids offset..<offset+n) in one transaction, with `towns` towns;
/// `timestamps`: `createdAt` is a `timestamptz` (Fluent's and PostgresNIO's tables).
func rawInsert(_ db: RawPG, n: Int, offset: Int = 0, towns: Int = 0, timestamps: Bool = false) throws {
    try db.exec("BEGIN")
    if towns > 0 {
        try db.prepare("", "INSERT INTO town (id, name) VALUES ($1, $2)")
        for k in 0..<towns { try db.step("", [String(k + 1), "Town \(k)"]) }
    }
    let created = timestamps ? "to_timestamp($6::double precision + 978307200)" : "$6"
    try db.prepare(
        "", #"INSERT INTO person (id, name, email, age, score, "createdAt", "townId") VALUES ($1, $2, $3, $4, $5, "# + created + ", $7)")
    for i in offset..<(offset + n) {
        try db.step(
            "",
            [
                String(i), Data_.name(i, n), Data_.email(i), String(Data_.age(i)), String(Data_.score(i)),
                String(Data_.created(i).timeIntervalSinceReferenceDate), towns > 0 ? String(i % towns + 1) : nil
            ])
    }
    try db.exec("COMMIT")
}
