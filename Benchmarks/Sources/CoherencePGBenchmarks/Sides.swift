import BenchmarkSupport
import Coherence
import CoherencePostgreSQL
import Foundation
import PostgresNIO

/// The four implementations' connections, each in its own schema of the server's database.
final class Sides: @unchecked Sendable {
    // @unchecked Sendable: made once, then used by one workload at a time.
    let server: Server
    /// Drops Coherence's schema between repetitions.
    let admin: RawPG
    /// Hand-written libpq, in `bench_libpq`.
    let raw: RawPG
    /// libpq connections that make and fill Fluent's and PostgresNIO's tables (untimed).
    let fluentTables: RawPG
    let nioTables: RawPG
    let fluent: FluentSide
    let nio: PostgresConnection

    static let coherenceSchema = "bench_coherence"

    init(_ server: Server) throws {
        self.server = server
        admin = try RawPG(server, schema: "public")
        raw = try RawPG(server, schema: "bench_libpq")
        fluentTables = try RawPG(server, schema: "bench_fluent")
        nioTables = try RawPG(server, schema: "bench_nio")
        fluent = try FluentSide(server, schema: "bench_fluent")
        nio = try blocking { [server] in try await nioConnection(server, schema: "bench_nio") }
    }

    /// A coordinator with Coherence's store in a new, empty schema.
    func freshCoherence() throws -> PersistentStoreCoordinator {
        try admin.exec("DROP SCHEMA IF EXISTS \(Self.coherenceSchema) CASCADE")
        let c = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
        try c.addPersistentStore(type: .postgreSQL, at: server.storeURL(schema: Self.coherenceSchema))
        return c
    }

    /// Removes the stores of `c` (closing their connections).
    func close(_ c: PersistentStoreCoordinator) {
        for store in c.persistentStores { try? c.remove(store) }
    }

    /// Empty tables in each of the other three schemas.
    func freshTables() throws {
        try raw.makeTables()
        try fluentTables.makeTables(dateType: "TIMESTAMPTZ")
        try nioTables.makeTables(dateType: "TIMESTAMPTZ")
    }

    /// `n` people (and `towns` towns) in every schema: a new Coherence store, the others' tables.
    func fill(n: Int, towns: Int = 0) throws -> PersistentStoreCoordinator {
        let c = try freshCoherence()
        try fillCoherence(c, n: n, towns: towns)
        try freshTables()
        try rawInsert(raw, n: n, towns: towns)
        try rawInsert(fluentTables, n: n, towns: towns, timestamps: true)
        try rawInsert(nioTables, n: n, towns: towns, timestamps: true)
        try admin.exec("ANALYZE")  // every table of the database, as autovacuum would soon
        return c
    }

    func close() throws {
        let fluent = self.fluent, nio = self.nio
        try blocking {
            try await nio.close()
            await fluent.shutdown()
        }
    }
}
