import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The PostgreSQL store's connections: the pool's size, reconnecting after a connection is
/// lost (in-flight saves fail with `.connectionLost` and change nothing), statement and lock
/// timeouts as `.timeout`.
@Suite struct PostgreSQLConnectionTests {
    /// A store URL in a new schema of `dir`, with `items` added and the schema as the
    /// connections' `application_name` (so the test can find and end its backends).
    func storeURL(_ dir: TemporaryDirectory, _ items: [String: String] = [:]) throws -> (url: URL, schema: String) {
        let base = try dir.postgreSQLURL()
        var components = try #require(URLComponents(url: base, resolvingAgainstBaseURL: false))
        let schema = try #require(components.queryItems?.first { $0.name == "schema" }?.value)
        components.queryItems =
            (components.queryItems ?? []) + [URLQueryItem(name: "application_name", value: schema)]
            + items.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        return (try #require(components.url), schema)
    }

    /// A coordinator with a store at `url`, and a context on it.
    func open(_ url: URL) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        return (coordinator, ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator))
    }

    /// Ends every server backend of the store (by its `application_name`) and waits until they
    /// are gone; returns how many there were.
    @discardableResult
    func terminateBackends(_ schema: String) throws -> Int {
        let admin = try PostgreSQLTestServer.connection()
        let ended = try admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", [.text(schema)])
        while (try admin.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", [.text(schema)]).firstInteger ?? 0)
            > 0
        {}
        return Int(ended.firstInteger ?? 0)
    }

    /// A second connection holding a lock on every `Person` row of the store's schema until it
    /// ends its transaction.
    func lockPeople(_ schema: String) throws -> PostgreSQLConnection {
        let locker = try PostgreSQLTestServer.connection()
        let table = try locker.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND lower(tablename) = 'person'", [.text(schema)])
        guard case .text(let name)? = table.rows.first?.first else { throw CoherenceError(.invalidRequest, "No person table.") }
        let q = SQLDialect.postgreSQL
        try locker.execute("BEGIN")
        try locker.execute("SELECT 1 FROM \(q.quote(schema)).\(q.quote(name)) FOR UPDATE")
        return locker
    }

    /// Waits until a backend of the store waits for a lock (polling the server).
    func waitForLockWait(_ schema: String) throws {
        let admin = try PostgreSQLTestServer.connection()
        while (try admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [.text(schema)]
        ).firstInteger ?? 0) == 0 {}
    }

    /// Saves a person Ada and returns her.
    func saveAda(_ context: ManagedObjectContext) throws -> Person {
        try context.performAndWait {
            let p = Person(context: context)
            p.name = "Ada"
            try context.save()
            return p
        }
    }

    /// One save inserting Grace and changing Ada (blocked by a lock on Ada's row).
    func saveGraceAndAge(_ context: ManagedObjectContext, _ ada: Person) throws {
        try context.performAndWait {
            Person(context: context).name = "Grace"
            ada.age = 37
            try context.save()
        }
    }

    func names(_ context: ManagedObjectContext) throws -> [String] {
        try context.performAndWait { try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])).map(\.name) }
    }

    @Test func poolSizeAndTimeoutsComeFromTheURL() throws {
        let url = try #require(
            URL(string: "postgresql://u@h/db?schema=s&pool_size=7&statement_timeout=5s&lock_timeout=250ms&application_name=a"))
        let c = try PostgreSQLConfiguration(url: url)
        #expect(c.poolSize == 7)
        #expect(c.settings.map(\.name) == ["statement_timeout", "lock_timeout"])
        #expect(c.settings.map(\.value) == ["5s", "250ms"])
        // The store's items are not libpq keywords.
        #expect(c.parameters.map(\.key) == ["user", "host", "dbname", "application_name"])
        #expect(try PostgreSQLConfiguration(url: try #require(URL(string: "postgresql://u@h/db"))).poolSize == 4)
        for bad in ["0", "101", "many"] {
            let error = #expect(throws: PostgreSQLError.self) {
                try PostgreSQLConfiguration(url: try #require(URL(string: "postgresql://u@h/db?pool_size=\(bad)")))
            }
            #expect(error?.message.contains("pool_size") == true)
        }
    }

    /// The pool keeps at most `pool_size` idle reader connections.
    @Test(.postgreSQLServer) func poolKeepsAtMostItsSize() throws {
        let dir = try TemporaryDirectory()
        let (url, _) = try storeURL(dir, ["pool_size": "2"])
        let (coordinator, _) = try open(url)
        let store = try #require(coordinator.persistentStores.first?.engine as? PostgreSQLStore)
        let taken = try (0..<3).map { _ in try store.takeReader() }
        for c in taken { store.returnReader(c) }
        #expect(store.idleReaderCount == 2)
    }

    /// After the server ended the store's connections (as a restart does), fetches and saves
    /// work again on new connections.
    @Test(.postgreSQLServer) func reconnectsAfterTheConnectionsWereLost() throws {
        let dir = try TemporaryDirectory()
        let (url, schema) = try storeURL(dir)
        let (_, context) = try open(url)
        try context.performAndWait {
            Person(context: context).name = "Ada"
            try context.save()
        }
        #expect(try names(context) == ["Ada"])
        #expect(try terminateBackends(schema) >= 2)
        #expect(try names(context) == ["Ada"])
        try context.performAndWait {
            Person(context: context).name = "Grace"
            try context.save()
        }
        #expect(try names(context) == ["Ada", "Grace"])
    }

    /// A save whose connection is lost while it runs fails with `.connectionLost` and changes
    /// nothing; the next save works.
    @Test(.postgreSQLServer) func inFlightSaveFailsWithConnectionLostAndChangesNothing() throws {
        let dir = try TemporaryDirectory()
        let (url, schema) = try storeURL(dir)
        let (_, context) = try open(url)
        let ada = try saveAda(context)
        let locker = try lockPeople(schema)
        // The save inserts Grace, then blocks on updating Ada; its backend is ended there.
        let killer = Thread {
            try? waitForLockWait(schema)
            _ = try? terminateBackends(schema)
        }
        killer.start()
        let error = #expect(throws: CoherenceError.self) { try saveGraceAndAge(context, ada) }
        #expect(error?.code == .connectionLost)
        try locker.execute("ROLLBACK")
        let (_, reader) = try open(url)
        #expect(try names(reader) == ["Ada"])
        #expect(try reader.performAndWait { try reader.fetch(FetchRequest<Person>()).map(\.age) } == [0])
        // The context still holds its changes; saving them again works on a new connection.
        try context.performAndWait { try context.save() }
        #expect(try names(reader) == ["Ada", "Grace"])
    }

    /// A save that waits for a lock longer than `lock_timeout` fails with `.timeout` and
    /// changes nothing.
    @Test(.postgreSQLServer) func lockTimeoutIsATypedError() throws {
        let dir = try TemporaryDirectory()
        let (url, schema) = try storeURL(dir, ["lock_timeout": "100ms"])
        let (_, context) = try open(url)
        let ada = try saveAda(context)
        let locker = try lockPeople(schema)
        let error = #expect(throws: CoherenceError.self) { try saveGraceAndAge(context, ada) }
        #expect(error?.code == .timeout)
        #expect(error?.underlyingErrors.contains { ($0 as? PostgreSQLError)?.sqlState == PostgreSQLError.lockNotAvailable } == true)
        try locker.execute("ROLLBACK")
        let (_, reader) = try open(url)
        #expect(try names(reader) == ["Ada"])
        try context.performAndWait { try context.save() }
        #expect(try names(reader) == ["Ada", "Grace"])
    }

    /// A fetch that runs longer than `statement_timeout` (here: waiting for a table lock) fails
    /// with `.timeout`. (The store is made first without the timeout: making its tables and
    /// functions can take longer than that on a loaded machine.)
    @Test(.postgreSQLServer) func statementTimeoutIsATypedError() throws {
        let dir = try TemporaryDirectory()
        _ = try open(try storeURL(dir).url)
        let (url, schema) = try storeURL(dir, ["statement_timeout": "500ms"])
        let (_, context) = try open(url)
        let locker = try lockPeople(schema)
        // An exclusive lock blocks readers too.
        let table = try locker.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND lower(tablename) = 'person'", [.text(schema)])
        guard case .text(let name)? = table.rows.first?.first else { throw CoherenceError(.invalidRequest, "No person table.") }
        let q = SQLDialect.postgreSQL
        try locker.execute("LOCK TABLE \(q.quote(schema)).\(q.quote(name)) IN ACCESS EXCLUSIVE MODE")
        let error = #expect(throws: CoherenceError.self) { try names(context) }
        #expect(error?.code == .timeout)
        try locker.execute("ROLLBACK")
        #expect(try names(context) == [])
    }
}
