import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Batch inserts of more rows than one INSERT statement writes (PostgreSQL writes several rows
/// per statement): the rows, their IDs, uniqueness resolution and history are those of
/// inserting row by row, on every store.
@Suite("Batch requests: many rows")
struct BatchInsertChunkTests {
    static let rows = 600

    /// Row `i`'s code: row 260 repeats row 258's code (in the same statement on PostgreSQL) and
    /// row 300 repeats row 10's (an earlier statement's).
    static func code(_ i: Int) -> String {
        switch i {
        case 260: "n258"
        case 300: "n10"
        default: "n\(i)"
        }
    }

    static func request() -> BatchInsertRequest<HNote> {
        var request = BatchInsertRequest<HNote>(objects: (0..<rows).map { ["code": code($0), "rank": $0] })
        request.resultType = .objectIDs
        return request
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func collisionsAcrossStatementsResolveAsRowByRow(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        var request = Self.request()
        request.mergePolicy = .mergeByPropertyObjectTrump
        let result = try c.execute(request)
        let ids = try #require(result.objectIDs)
        #expect(result.count == Self.rows && ids.count == Self.rows)
        #expect(ids[260] == ids[258] && ids[300] == ids[10])
        // Every row takes the next key, a refused one included.
        let first = try #require(ids.first).primaryKey
        #expect((0..<Self.rows).filter { $0 != 260 && $0 != 300 }.allSatisfy { ids[$0].primaryKey == first + Int64($0) })
        #expect(result.insertedObjectIDs.count == Self.rows - 2 && result.updatedObjectIDs.isEmpty)
        // The later row's values win.
        let stored = try c.rows(for: [ids[10], ids[258], ids[11]])
        #expect(stored[ids[10]].map { named($0)["rank"] } == .integer(300))
        #expect(stored[ids[258]].map { named($0)["rank"] } == .integer(260))
        #expect(stored[ids[11]].map { named($0)["rank"] } == .integer(11))
        #expect(try c.count(for: FetchRequest<HNote>()) == Self.rows - 2)
        // History: one transaction listing each object once, as inserted.
        let history = try allHistory(c)
        #expect(history.count == 1)
        let changes = history.first?.changes ?? []
        #expect(changes.count == Self.rows - 2 && changes.allSatisfy { $0.changeType == .insert })
        #expect(Set(changes.map(\.changedObjectID)) == result.insertedObjectIDs)
    }

    /// Without a merge policy the first colliding row fails the request (named by its number,
    /// even when it is in a later statement than the row it collides with), and nothing is written.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aCollisionInALaterStatementFailsAndWritesNothing(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(type, in: dir)
        let error = try #require(batchError { _ = try c.execute(Self.request()) })
        #expect(error.code == .conflict && error.entityName == "HNote")
        #expect(error.message.contains("row 260") && error.message.contains("\"n258\""))
        #expect(try c.count(for: FetchRequest<HNote>()) == 0)
        #expect(try allHistory(c).isEmpty)
        // A row that breaks validation after a colliding one: the collision is reported, as row by row.
        let late = (0..<Self.rows).map { i -> [String: any Sendable] in i == 400 ? ["rank": 1] : ["code": Self.code(i), "rank": i] }
        let both = try #require(batchError { _ = try c.execute(BatchInsertRequest<HNote>(objects: late)) })
        #expect(both.code == .conflict && both.message.contains("row 260"))
    }

    /// On PostgreSQL a batch insert writes many rows per INSERT statement (a statement-level
    /// trigger counts the statements), not one per row.
    @Test(.postgreSQLServer)
    func postgreSQLWritesManyRowsPerStatement() throws {
        let dir = try TemporaryDirectory()
        let c = try makeHistoryCoordinator(.postgreSQL, in: dir)
        let url = try #require(try historyStoreURL(.postgreSQL, in: dir))
        let schema = SQLDialect.postgreSQL.quote(PostgreSQLTestServer.schema(of: url))
        let entity = try #require(c.managedObjectModel.entitiesByName["HNote"])
        let table = SQLGenerator(dialect: .postgreSQL).table(entity)
        let server = try PostgreSQLTestServer.connection()
        for sql in [
            "CREATE TABLE \(schema).statements (n integer NOT NULL)", "INSERT INTO \(schema).statements VALUES (0)",
            "CREATE FUNCTION \(schema).count_statement() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE \(schema).statements SET n = n + 1; RETURN NULL; END $$",
            "CREATE TRIGGER count_inserts AFTER INSERT ON \(schema).\(table) FOR EACH STATEMENT EXECUTE FUNCTION \(schema).count_statement()"
        ] { try server.execute(sql) }
        func statements() throws -> Int64 { try server.execute("SELECT n FROM \(schema).statements").firstInteger ?? -1 }
        // Without collisions: one statement per chunk of rows.
        let chunk = PostgreSQLBatchWriter.insertChunkRows
        var plain = BatchInsertRequest<HNote>(objects: (0..<Self.rows).map { ["code": "m\($0)", "rank": $0] })
        plain.resultType = .objectIDs
        #expect(try c.execute(plain).count == Self.rows)
        #expect(try statements() == Int64((Self.rows + chunk - 1) / chunk))
        // A chunk with a collision is written again row by row; the others stay one statement each.
        var request = Self.request()
        request.mergePolicy = .mergeByPropertyObjectTrump
        #expect(try c.execute(request).count == Self.rows)
        #expect(try c.count(for: FetchRequest<HNote>()) == 2 * Self.rows - 2)
        #expect(try statements() == Int64((Self.rows + chunk - 1) / chunk) * 2 + Int64(chunk) - 1)
    }
}
