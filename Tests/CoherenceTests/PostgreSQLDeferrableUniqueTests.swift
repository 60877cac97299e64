import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

// A unique constraint that another program added to a PostgreSQL store's table as
// DEFERRABLE (INITIALLY DEFERRED): PostgreSQL refuses `INSERT … ON CONFLICT` on such a table
// ("ON CONFLICT does not support deferrable unique constraints/exclusion constraints as
// arbiters"), which the store's inserts used, so no row could be inserted into it at all.
// Rows that keep the constraint are inserted; one that breaks it fails the save (or batch
// request) at COMMIT with `.storeWriteFailed` and the server's 23505, leaving the store as it was.

/// Rows with a uniqueness constraint of the model (`text`) and a column another program
/// constrains (`rank`).
final class DeferrableRankNote: ManagedObject {
    @Attribute(.unique) var text: String = ""
    @Attribute var rank: Int = 0
}

/// Rows without uniqueness constraints in the model, and a column another program constrains.
final class DeferrableRankItem: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var rank: Int = 0
}

/// Which table the outside constraint is on.
enum DeferrableRankTable: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case modelConstrained, unconstrained
    var testDescription: String { rawValue }
    var table: String { self == .modelConstrained ? "DeferrableRankNote" : "DeferrableRankItem" }
}

@Suite("PostgreSQL: deferrable unique constraints of another program", .postgreSQLServer, .serialized)
struct PostgreSQLDeferrableUniqueTests {
    let model: ManagedObjectModel
    init() throws { model = try ManagedObjectModel(types: [DeferrableRankNote.self, DeferrableRankItem.self]) }

    func open(_ url: URL) throws -> ManagedObjectContext {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: StoreOptions(persistentHistoryTracking: true))
        return ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    }

    /// Adds `UNIQUE (rank) DEFERRABLE INITIALLY DEFERRED` to the table, as another program would.
    func addDeferrableUnique(_ schema: String, _ table: DeferrableRankTable) throws {
        let q = SQLDialect.postgreSQL.quote
        try PostgreSQLTestServer.connection().execute(
            "ALTER TABLE \(q(schema)).\(q(table.table)) ADD CONSTRAINT outside_rank UNIQUE (rank) DEFERRABLE INITIALLY DEFERRED")
    }

    /// Inserts a row of the table with `rank`.
    func insert(_ table: DeferrableRankTable, _ name: String, rank: Int, in context: ManagedObjectContext) {
        switch table {
        case .modelConstrained:
            let n = DeferrableRankNote(context: context)
            n.text = name
            n.rank = rank
        case .unconstrained:
            let i = DeferrableRankItem(context: context)
            i.name = name
            i.rank = rank
        }
    }

    /// The rows of the table as `name:rank`, sorted, read by a new coordinator.
    func stored(_ url: URL, _ table: DeferrableRankTable) throws -> [String] {
        let reader = try open(url)
        return try reader.performAndWait {
            switch table {
            case .modelConstrained: try reader.fetch(FetchRequest<DeferrableRankNote>()).map { "\($0.text):\($0.rank)" }.sorted()
            case .unconstrained: try reader.fetch(FetchRequest<DeferrableRankItem>()).map { "\($0.name):\($0.rank)" }.sorted()
            }
        }
    }

    func save(_ context: ManagedObjectContext) -> CoherenceError? {
        context.performAndWait { () -> CoherenceError? in
            do throws(CoherenceError) { try context.save() } catch { return error }
            return nil
        }
    }

    /// Saves that insert rows keeping the constraint work, whether the constraint was added while
    /// the store was open or before it opened; a row breaking it fails the save at COMMIT with
    /// `.storeWriteFailed` (23505), nothing written, and the save works once the row is mended.
    @Test(arguments: DeferrableRankTable.allCases, [false, true])
    func savesInsertIntoTheTable(_ table: DeferrableRankTable, addedBeforeOpening: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL()
        let schema = PostgreSQLTestServer.schema(of: url)
        var context = try open(url)
        context.performAndWait { insert(table, "a", rank: 1, in: context) }
        #expect(save(context) == nil)
        try addDeferrableUnique(schema, table)
        if addedBeforeOpening { context = try open(url) }

        context.performAndWait { insert(table, "b", rank: 2, in: context) }
        let inserted = save(context)
        #expect(inserted == nil, "\(String(describing: inserted))")
        #expect(try stored(url, table) == ["a:1", "b:2"])

        let before = try PostgreSQLTestServer.dump(schema: schema)
        context.performAndWait {
            insert(table, "c", rank: 3, in: context)
            insert(table, "d", rank: 1, in: context)
        }
        let error = save(context)
        #expect(error?.code == .storeWriteFailed)
        #expect((error?.underlyingErrors.first as? PostgreSQLError)?.sqlState == PostgreSQLError.uniqueViolation)
        #expect(try PostgreSQLTestServer.dump(schema: schema) == before)
        #expect(context.performAndWait { context.insertedObjects.count } == 2)

        context.performAndWait {
            for case let n as DeferrableRankNote in context.insertedObjects where n.text == "d" { n.rank = 4 }
            for case let i as DeferrableRankItem in context.insertedObjects where i.name == "d" { i.rank = 4 }
        }
        #expect(save(context) == nil)
        #expect(try stored(url, table) == ["a:1", "b:2", "c:3", "d:4"])
    }

    /// The model's own uniqueness constraint is still reported as a conflict (and resolved by the
    /// merge policy) on a table that also has another program's deferrable unique constraint.
    @Test func theModelsUniquenessConflictsAreStillFound() throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL()
        let context = try open(url)
        context.performAndWait { insert(.modelConstrained, "a", rank: 1, in: context) }
        #expect(save(context) == nil)
        try addDeferrableUnique(PostgreSQLTestServer.schema(of: url), .modelConstrained)

        context.performAndWait { insert(.modelConstrained, "a", rank: 2, in: context) }
        let error = save(context)
        #expect(error?.code == .conflict)
        #expect(error?.conflicts.first?.kind == .uniqueness)
        context.performAndWait { context.mergePolicy = .mergeByPropertyObjectTrump }
        #expect(save(context) == nil)
        #expect(try stored(url, .modelConstrained) == ["a:2"])
    }

    /// Batch inserts into the table: rows keeping the constraint are inserted; a request with a
    /// row breaking it fails with `.storeWriteFailed` (23505) and inserts nothing; a row the
    /// model's uniqueness constraint refuses is resolved by the merge policy.
    @Test(arguments: DeferrableRankTable.allCases)
    func batchInsertsIntoTheTable(_ table: DeferrableRankTable) throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL()
        let schema = PostgreSQLTestServer.schema(of: url)
        let context = try open(url)
        try addDeferrableUnique(schema, table)
        func run(_ rows: [(String, Int)]) -> CoherenceError? {
            let key = table == .modelConstrained ? "text" : "name"
            let objects: [[String: any Sendable]] = rows.map { [key: $0.0, "rank": $0.1] }
            return context.performAndWait { () -> CoherenceError? in
                do throws(CoherenceError) {
                    switch table {
                    case .modelConstrained: _ = try context.execute(BatchInsertRequest<DeferrableRankNote>(objects: objects))
                    case .unconstrained: _ = try context.execute(BatchInsertRequest<DeferrableRankItem>(objects: objects))
                    }
                } catch {
                    return error
                }
                return nil
            }
        }
        let first = run([("a", 1), ("b", 2)])
        #expect(first == nil, "\(String(describing: first))")
        #expect(try stored(url, table) == ["a:1", "b:2"])
        let before = try PostgreSQLTestServer.dump(schema: schema)
        let error = run([("c", 3), ("d", 2)])
        #expect(error?.code == .storeWriteFailed)
        #expect((error?.underlyingErrors.first as? PostgreSQLError)?.sqlState == PostgreSQLError.uniqueViolation)
        #expect(try PostgreSQLTestServer.dump(schema: schema) == before)
        if table == .modelConstrained {
            // A row the model's constraint refuses updates the stored one, as the policy says.
            context.performAndWait { context.mergePolicy = .mergeByPropertyObjectTrump }
            #expect(run([("a", 9), ("e", 5)]) == nil)
            #expect(try stored(url, table) == ["a:9", "b:2", "e:5"])
        }
    }
}
