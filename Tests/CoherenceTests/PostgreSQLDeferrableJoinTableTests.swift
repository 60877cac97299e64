import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

// A many-to-many relationship's join table whose primary key another program made
// DEFERRABLE INITIALLY DEFERRED: PostgreSQL refuses `INSERT … ON CONFLICT` on such a table
// (SQLSTATE 55000), which the store used for every pair it adds.

@Suite("PostgreSQL: a join table with a deferrable key of another program", .postgreSQLServer, .serialized)
struct PostgreSQLDeferrableJoinTableTests {
    /// The join table of `Person.clubs` (the one table of the schema with columns Z_1 and Z_2).
    func joinTable(_ schema: String) throws -> String {
        let rows = try PostgreSQLTestServer.connection().execute(
            "SELECT DISTINCT table_name::text FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'z_1'",
            [.text(schema)]
        ).rows
        guard rows.count == 1, case .text(let name)? = rows.first?.first else {
            throw CoherenceError(.invalidRequest, "no single join table in \(schema): \(rows)")
        }
        return name
    }

    /// Makes the join table's primary key `DEFERRABLE INITIALLY DEFERRED`, as another program would.
    func deferJoinTableKey(_ schema: String) throws {
        let q = SQLDialect.postgreSQL.quote
        let table = "\(q(schema)).\(q(try joinTable(schema)))"
        let c = try PostgreSQLTestServer.connection()
        let constraint = try c.execute(
            "SELECT conname::text FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'", [.text(table)]
        ).rows.first?.first
        guard case .text(let name)? = constraint else { throw CoherenceError(.invalidRequest, "no primary key on \(table)") }
        try c.execute(
            "ALTER TABLE \(table) DROP CONSTRAINT \(q(name)), ADD CONSTRAINT \(q(name)) PRIMARY KEY (Z_1, Z_2) DEFERRABLE INITIALLY DEFERRED"
        )
    }

    func open(_ url: URL) throws -> ManagedObjectContext {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Person.self, Town.self, Club.self]))
        try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: StoreOptions(persistentHistoryTracking: true))
        return ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    }

    /// Every person's clubs, as `name:club,club`, read by a new coordinator.
    func memberships(_ url: URL) throws -> [String] {
        let reader = try open(url)
        return try reader.performAndWait {
            try reader.fetch(FetchRequest<Person>()).map { "\($0.name):\($0.clubs.map(\.title).sorted().joined(separator: ","))" }.sorted()
        }
    }

    /// Pairs added to the join table are saved, whether the key was made deferrable while the
    /// store was open or before it opened, and pairs removed and added again in later saves too.
    @Test(arguments: [false, true])
    func pairsAreSavedIntoTheJoinTable(_ madeBeforeOpening: Bool) throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL()
        let schema = PostgreSQLTestServer.schema(of: url)
        var context = try open(url)
        try context.performAndWait {
            let ann = Person(context: context)
            ann.name = "ann"
            let chess = Club(context: context)
            chess.title = "chess"
            ann.clubs = [chess]
            try context.save()
        }
        try deferJoinTableKey(schema)
        if madeBeforeOpening { context = try open(url) }

        let error = context.performAndWait { () -> (any Error)? in
            do {
                let ann = try #require(try context.fetch(FetchRequest<Person>()).first)
                let go = Club(context: context)
                go.title = "go"
                ann.clubs.insert(go)
                let bob = Person(context: context)
                bob.name = "bob"
                bob.clubs = Set(try context.fetch(FetchRequest<Club>()))
                try context.save()
            } catch { return error }
            return nil
        }
        #expect(error == nil, "\(String(describing: error))")
        #expect(try memberships(url) == ["ann:chess,go", "bob:chess,go"])

        // Removed, then added again in another save.
        try context.performAndWait {
            let bob = try #require(try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "bob" })).first)
            let chess = try #require(bob.clubs.first { $0.title == "chess" })
            bob.clubs.remove(chess)
            try context.save()
            bob.clubs.insert(chess)
            try context.save()
        }
        #expect(try memberships(url) == ["ann:chess,go", "bob:chess,go"])
    }
}
