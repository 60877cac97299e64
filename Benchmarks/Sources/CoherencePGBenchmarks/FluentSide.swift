import BenchmarkSupport
import FluentKit
import FluentPostgresDriver
import Foundation
import Logging

// Fluent (fluent-kit 1.57.0, fluent-postgres-driver 2.14.0): models with property wrappers, one
// `create`, `update` or `delete` per object (inside `transaction` for one save), queries through
// the query builder, the relationship eager-loaded with `with`. Dates are `timestamptz`.

final class FPerson: Model, @unchecked Sendable {
    // @unchecked Sendable: Fluent models are classes with mutable wrappers; each benchmark uses
    // an object from one task at a time.
    static let schema = "person"
    @ID(custom: "id", generatedBy: .user) var id: Int?
    @Field(key: "name") var name: String
    @Field(key: "email") var email: String
    @Field(key: "age") var age: Int
    @Field(key: "score") var score: Double
    @Field(key: "createdAt") var createdAt: Date
    @OptionalParent(key: "townId") var town: FTown?

    init() {}

    init(_ i: Int, _ n: Int) {
        id = i
        name = Data_.name(i, n)
        email = Data_.email(i)
        age = Data_.age(i)
        score = Data_.score(i)
        createdAt = Data_.created(i)
    }
}

final class FTown: Model, @unchecked Sendable {
    // @unchecked Sendable: as FPerson.
    static let schema = "town"
    @ID(custom: "id", generatedBy: .user) var id: Int?
    @Field(key: "name") var name: String
    init() {}
}

/// Fluent's databases (a pool per event loop) and the database of one schema.
final class FluentSide: @unchecked Sendable {
    // @unchecked Sendable: set up once in init, then only read.
    let databases: Databases
    let db: any Database

    init(_ server: Server, schema: String) throws {
        var configuration: SQLPostgresConfiguration
        if let directory = server.socketDirectory {
            configuration = SQLPostgresConfiguration(
                unixDomainSocketPath: "\(directory)/.s.PGSQL.\(server.port)", username: server.user, password: server.password,
                database: server.database)
        } else {
            configuration = SQLPostgresConfiguration(
                hostname: server.host, port: server.port, username: server.user, password: server.password, database: server.database,
                tls: .disable)
        }
        configuration.searchPath = [schema]
        databases = Databases(threadPool: NIOThreadPool.singleton, on: MultiThreadedEventLoopGroup.singleton)
        databases.use(.postgres(configuration: configuration), as: .psql)
        guard let db = databases.database(.psql, logger: quietLogger, on: MultiThreadedEventLoopGroup.singleton.any()) else {
            throw BenchmarkError("Fluent has no database")
        }
        self.db = db
    }

    func shutdown() async { await databases.shutdownAsync() }

    /// W1: `n` creates in one transaction.
    func insertAll(n: Int) async throws {
        try await db.transaction { db in
            for i in 0..<n { try await FPerson(i, n).create(on: db) }
        }
    }

    /// W2: every person, every property read.
    func fetchAll() async throws -> Int {
        var s = 0
        for p in try await FPerson.query(on: db).all() {
            s &+=
                (p.id ?? 0) &+ p.name.utf8.count &+ p.email.utf8.count &+ p.age &+ Int(p.score)
                &+ Int(p.createdAt.timeIntervalSinceReferenceDate)
        }
        return s
    }

    /// W3: the range query, 100 times.
    func range() async throws -> Int {
        var s = 0
        for _ in 0..<100 {
            let people = try await FPerson.query(on: db).filter(\.$age >= 30).filter(\.$age <= 40).sort(\.$name).limit(1000).all()
            for p in people { s &+= p.name.utf8.count }
        }
        return s
    }

    /// The people with ids below `k`.
    func first(_ k: Int) async throws -> [FPerson] {
        try await FPerson.query(on: db).filter(\.$id < k).all()
    }

    /// W4: changes the score of `people` and updates each in one transaction.
    func changeScores(_ people: [FPerson], round: Double) async throws {
        try await db.transaction { db in
            for p in people {
                p.score = round + Double(p.id ?? 0)
                try await p.update(on: db)
            }
        }
    }

    /// W5: deletes `people` in one transaction.
    func delete(_ people: [FPerson]) async throws {
        try await db.transaction { db in
            for p in people { try await p.delete(on: db) }
        }
    }

    /// W6: `k` creates, each its own transaction.
    func singleInserts(k: Int) async throws {
        for i in 0..<k { try await FPerson(i, k).create(on: db) }
    }

    /// W7: every person with its town eager-loaded, the town's name read.
    func walk() async throws -> Int {
        var s = 0
        for p in try await FPerson.query(on: db).with(\.$town).all() { s &+= p.town?.name.utf8.count ?? 0 }
        return s
    }
}
