import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

// A save or batch request that spans a PostgreSQL store and another store (SQLite, or
// PostgreSQL in another schema) and that the PostgreSQL store's COMMIT would refuse leaves
// every store as it was. Forced with constraints another program added to the PostgreSQL
// store's tables, checked only at COMMIT (DEFERRABLE INITIALLY DEFERRED): a foreign key, a
// unique constraint, a constraint trigger. The PostgreSQL store commits second.

/// A record of the first store.
final class ServerRecoveryItem: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Attribute var count: Int = 0
}

/// A record of the second store.
final class ServerRecoveryNote: ManagedObject {
    @Attribute(.unique) var text: String = ""
    @Attribute var rank: Int = 0
}

/// The stores of a test: the first one (SQLite or PostgreSQL), then a PostgreSQL one.
enum ServerRecoveryLayout: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqliteThenPostgreSQL, postgreSQLThenPostgreSQL
    var testDescription: String { rawValue }
    var firstType: StoreType { self == .sqliteThenPostgreSQL ? .sqlite : .postgreSQL }
}

/// A constraint another program adds to the PostgreSQL store, refusing at COMMIT what the save
/// below does to `n0` or `n1`.
enum OutsideConstraint: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// A table whose deferred foreign key refers to `n0`: deleting `n0` breaks it.
    case foreignKey
    /// A deferred unique constraint on `rank`, with `n2` moved to rank 5: `n1.rank = 5` breaks it.
    case unique
    /// A deferred constraint trigger refusing to delete `n0`.
    case trigger
    var testDescription: String { rawValue }

    /// The SQLSTATE the server reports.
    var sqlState: String {
        switch self {
        case .foreignKey: "23503"
        case .unique: PostgreSQLError.uniqueViolation
        case .trigger: "P0001"
        }
    }

    /// Adds the constraint to `schema`; returns the statements that make the data acceptable
    /// again (the constraint stays).
    func add(to schema: String) throws -> [String] {
        let q = SQLDialect.postgreSQL.quote
        let s = q(schema), notes = "\(q(schema)).\(q("ServerRecoveryNote"))"
        let statements: [String]
        let undo: [String]
        switch self {
        case .foreignKey:
            statements = [
                "CREATE TABLE \(s).guard (note BIGINT REFERENCES \(notes)(z_pk) DEFERRABLE INITIALLY DEFERRED)",
                "INSERT INTO \(s).guard SELECT z_pk FROM \(notes) WHERE \"text\" = 'n0'"
            ]
            undo = ["DELETE FROM \(s).guard"]
        case .unique:
            statements = [
                "UPDATE \(notes) SET rank = 5 WHERE \"text\" = 'n2'",
                "ALTER TABLE \(notes) ADD CONSTRAINT outside_rank UNIQUE (rank) DEFERRABLE INITIALLY DEFERRED"
            ]
            undo = ["UPDATE \(notes) SET rank = 9 WHERE \"text\" = 'n2'"]
        case .trigger:
            statements = [
                "CREATE TABLE \(s).protected (\"text\" TEXT)",
                "INSERT INTO \(s).protected VALUES ('n0')",
                """
                CREATE FUNCTION \(s).refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                IF EXISTS (SELECT 1 FROM \(s).protected p WHERE p."text" = OLD."text") THEN \
                RAISE EXCEPTION 'note % is protected', OLD."text"; END IF; RETURN NULL; END $$
                """,
                """
                CREATE CONSTRAINT TRIGGER refuse_delete AFTER DELETE ON \(notes) DEFERRABLE INITIALLY DEFERRED \
                FOR EACH ROW EXECUTE FUNCTION \(s).refuse_delete()
                """
            ]
            undo = ["DELETE FROM \(s).protected"]
        }
        let c = try PostgreSQLTestServer.connection()
        for sql in statements { try c.execute(sql) }
        return undo
    }
}

/// Every table of a SQLite file, every row as text, read on a connection of its own.
private func sqliteTables(_ url: URL) throws -> [String: [String]] {
    let c = try SQLiteConnection(location: .file(url.path), readOnly: true, switchesToWAL: false)
    var dump: [String: [String]] = [:]
    for t in try c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").rows({ $0.string(0) }) {
        let st = try c.prepare("SELECT * FROM \"\(t)\"")
        var rows: [String] = []
        while try st.step() { rows.append((0..<st.columnCount).map { "\(st.value($0))" }.joined(separator: "|")) }
        dump[t] = rows.sorted()
    }
    return dump
}

/// Everything a store holds, as text: a SQLite file's tables or a PostgreSQL schema.
private func contents(_ url: URL, _ type: StoreType) throws -> String {
    type == .sqlite
        ? "\(try sqliteTables(url).sorted { $0.key < $1.key })"
        : try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url))
}

// (One case at a time: each holds two coordinators of two stores, and the suite's connections
// would otherwise add up to a good part of the test server's `max_connections`.)
@Suite("Save failure recovery: PostgreSQL", .postgreSQLServer, .serialized)
struct PostgreSQLSaveFailureRecoveryTests {
    let model: ManagedObjectModel
    init() throws {
        model = try ManagedObjectModel(
            types: [ServerRecoveryItem.self, ServerRecoveryNote.self],
            configurations: ["Items": ["ServerRecoveryItem"], "Notes": ["ServerRecoveryNote"]])
    }

    /// A coordinator with the first store (items) and the PostgreSQL store (notes).
    private func coordinator(_ layout: ServerRecoveryLayout, _ items: URL, _ notes: URL) throws -> PersistentStoreCoordinator {
        let c = PersistentStoreCoordinator(managedObjectModel: model)
        let history = StoreOptions(persistentHistoryTracking: true)
        try c.addPersistentStore(type: layout.firstType, configuration: "Items", at: items, options: history)
        try c.addPersistentStore(type: .postgreSQL, configuration: "Notes", at: notes, options: history)
        return c
    }

    @Test(arguments: ServerRecoveryLayout.allCases, OutsideConstraint.allCases)
    func aSaveThePostgreSQLStoreCannotCommitWritesNothingAndCanBeRetried(
        _ layout: ServerRecoveryLayout, _ constraint: OutsideConstraint
    ) throws {
        let dir = try TemporaryDirectory()
        let items = try #require(try dir.storeURL(layout.firstType, "items")), notes = try dir.postgreSQLURL("notes")
        let coordinator = try coordinator(layout, items, notes)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for i in 0..<3 {
                ServerRecoverySeed.insert(i, in: context)
            }
            try context.save()
        }
        let undo = try constraint.add(to: PostgreSQLTestServer.schema(of: notes))
        let before = (try contents(items, layout.firstType), try contents(notes, .postgreSQL))
        // The stores as the coordinator commits them.
        let log = LockedValue<[UUID]>([])
        coordinator.beforeCommitHook.withLock { $0 = { id in log.withLock { $0.append(id) } } }
        let error = context.performAndWait { () -> CoherenceError? in
            // The item store comes first in the save (its insert), so it commits first.
            ServerRecoveryItem(context: context).name = "new"
            let i1 = try? context.fetch(FetchRequest<ServerRecoveryItem>(predicate: #Predicate { $0.name == "i1" })).first
            i1?.count = 7
            if let n0 = try? context.fetch(FetchRequest<ServerRecoveryNote>(predicate: #Predicate { $0.text == "n0" })).first {
                context.delete(n0)
            }
            let n1 = try? context.fetch(FetchRequest<ServerRecoveryNote>(predicate: #Predicate { $0.text == "n1" })).first
            n1?.rank = 5
            do throws(CoherenceError) { try context.save() } catch { return error }
            return nil
        }
        let noteStore = try #require(coordinator.persistentStores.last)
        #expect(error?.code == .storeWriteFailed)
        #expect(error?.store == PersistentStoreCoordinator.location(of: noteStore))
        #expect((error?.underlyingErrors.first as? PostgreSQLError)?.sqlState == constraint.sqlState)
        // No store committed: rows, history and key counters of both stores as they were.
        #expect(log.withLock { $0 } == [])
        #expect(try contents(items, layout.firstType) == before.0)
        #expect(try contents(notes, .postgreSQL) == before.1)
        // The context still has its changes.
        #expect(
            context.performAndWait { (context.insertedObjects.count, context.updatedObjects.count, context.deletedObjects.count) } == (
                1, 2, 1
            ))

        let c = try PostgreSQLTestServer.connection()
        for sql in undo { try c.execute(sql) }
        let retry = context.performAndWait { () -> CoherenceError? in
            do throws(CoherenceError) { try context.save() } catch { return error }
            return nil
        }
        #expect(retry == nil)
        // Committed in the order of the save: the item store, then the PostgreSQL store.
        #expect(log.withLock { $0 } == coordinator.persistentStores.map(\.identifier))
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try self.coordinator(layout, items, notes))
        let stored = try reader.performAndWait {
            (
                try reader.fetch(FetchRequest<ServerRecoveryItem>()).map { "\($0.name):\($0.count)" }.sorted(),
                try reader.fetch(FetchRequest<ServerRecoveryNote>()).map { "\($0.text):\($0.rank)" }.sorted()
            )
        }
        #expect(stored.0 == ["i0:0", "i1:7", "i2:0", "new:0"])
        #expect(stored.1 == ["n1:5", constraint == .unique ? "n2:9" : "n2:2"])
    }

    @Test(arguments: ServerRecoveryLayout.allCases)
    func aBatchDeleteThePostgreSQLStoreCannotCommitDeletesNothing(_ layout: ServerRecoveryLayout) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [ServerRecoveryItem.self, ServerRecoveryNote.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let first = try #require(try dir.storeURL(layout.firstType, "first")), second = try dir.postgreSQLURL("second")
        try coordinator.addPersistentStore(type: layout.firstType, at: first)
        let secondStore = try coordinator.addPersistentStore(type: .postgreSQL, at: second)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            ServerRecoveryNote(context: context).text = "in first"
            let other = ServerRecoveryNote(context: context)
            other.text = "n0"
            try context.assign(other, to: secondStore)
            try context.save()
        }
        let undo = try OutsideConstraint.foreignKey.add(to: PostgreSQLTestServer.schema(of: second))
        let before = (try contents(first, layout.firstType), try contents(second, .postgreSQL))
        let error = #expect(throws: CoherenceError.self) {
            _ = try coordinator.execute(BatchDeleteRequest(fetchRequest: FetchRequest<ServerRecoveryNote>()))
        }
        #expect(error?.code == .storeWriteFailed && error?.store == PersistentStoreCoordinator.location(of: secondStore))
        #expect(try contents(first, layout.firstType) == before.0)
        #expect(try contents(second, .postgreSQL) == before.1)
        let c = try PostgreSQLTestServer.connection()
        for sql in undo { try c.execute(sql) }
        _ = try coordinator.execute(BatchDeleteRequest(fetchRequest: FetchRequest<ServerRecoveryNote>()))
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        #expect(try reader.performAndWait { try reader.count(for: FetchRequest<ServerRecoveryNote>()) } == 0)
    }
}

/// The seed rows: items `i0`… (count 0) and notes `n0`… (rank = number).
private enum ServerRecoverySeed {
    static func insert(_ i: Int, in context: ManagedObjectContext) {
        ServerRecoveryItem(context: context).name = "i\(i)"
        let note = ServerRecoveryNote(context: context)
        note.text = "n\(i)"
        note.rank = i
    }
}
