import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The container (`GenericConnect`) over PostgreSQL stores: per-user stores as schemas attached
/// and detached at run time, and actions (entity actions merging, cancellation). The context
/// strategies over a PostgreSQL store are in `StrategyTests`.
@Suite(.timeLimit(.minutes(3))) struct PostgreSQLContainerTests {
    /// A store URL in a schema of its own for `name`, with the schema as `application_name`.
    static func storeURL(_ dir: TemporaryDirectory, _ name: String) throws -> (url: URL, schema: String) {
        let base = try dir.postgreSQLURL(name)
        var components = try #require(URLComponents(url: base, resolvingAgainstBaseURL: false))
        let schema = PostgreSQLTestServer.schema(of: base)
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "application_name", value: schema)]
        return (try #require(components.url), schema)
    }

    /// How many server connections a schema's store holds.
    static func connections(_ schema: String) throws -> Int64 {
        try PostgreSQLTestServer.connection().execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", [.text(schema)]
        ).firstInteger ?? -1
    }

    /// The server connections of `schema` once the ones its store closed are gone: a closed
    /// libpq connection's server process ends after the client has moved on, so its row in
    /// `pg_stat_activity` can outlive the close for a moment. Asks again until none is left
    /// (or the test guard runs out), and returns the last count.
    static func connectionsAfterClose(_ schema: String) throws -> Int64 {
        let observer = try PostgreSQLTestServer.connection()
        let deadline = Date().addingTimeInterval(testGuardSeconds)
        var count: Int64 = -1
        repeat {
            count =
                try observer.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", [.text(schema)]).firstInteger
                ?? -1
        } while count != 0 && Date() < deadline
        return count
    }

    static func employeeNames(_ context: ManagedObjectContext) async throws -> [String] {
        try await context.perform {
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Employee")).compactMap { try $0.value(forKey: "name") as? String }
                .sorted()
        }
    }

    static func addEmployee(_ context: ManagedObjectContext, _ name: String) async throws {
        try await context.perform {
            let e = try context.insertNewObject(forEntityName: "Employee")
            try e.setValue(name, forKey: "name")
            try e.setValue("\(name)@example.com", forKey: "email")
            try context.save()
        }
    }

    /// Each user's store is a schema: attached at login, detached at logout (its connections
    /// closed), attached again with its data; two users' stores at once are read together.
    @Test(.postgreSQLServer) func oneSchemaPerUserAttachedAndDetachedAfterStart() async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Mixed>(name: "HR", bundle: .module)
        connect.storeLocation = dir.url
        try connect.attachPersistentStore(for: StoreConfiguration(name: "TransientData", type: .inMemory))
        try connect.start()
        var users: [String: (url: URL, schema: String)] = [:]
        for user in ["alice", "bob"] {
            let location = try Self.storeURL(dir, "user_\(user)")
            users[user] = location
            let store = try connect.attachPersistentStore(
                for: StoreConfiguration(name: "PersistentData", type: .postgreSQL, location: location.url))
            #expect(store.type == .postgreSQL)
            let context = connect.newBackgroundContext()
            try await Self.addEmployee(context, user)
            #expect(try await Self.employeeNames(context) == [user])  // the other user's store is not attached
            #expect(try Self.connections(location.schema) > 0)
            try connect.detach(persistentStore: store)
            #expect(try Self.connectionsAfterClose(location.schema) == 0)
        }
        #expect(connect.persistentStoreCoordinator.persistentStores.count == 1)
        let both = try ["alice", "bob"].compactMap { users[$0] }.map {
            try connect.attachPersistentStore(for: StoreConfiguration(name: "PersistentData", type: .postgreSQL, location: $0.url))
        }
        let reader = connect.newBackgroundContext()
        #expect(try await Self.employeeNames(reader) == ["alice", "bob"])
        try connect.detach(persistentStores: both)
        #expect(throws: CoherenceError.self) { try connect.detach(persistentStore: both[0]) }
        try connect.stop()
        #expect(connect.persistentStoreCoordinator.persistentStores.isEmpty)
        for location in users.values { #expect(try Self.connectionsAfterClose(location.schema) == 0) }
    }

    /// A connect whose store is a PostgreSQL schema, for actions.
    static func actionConnect(_ dir: TemporaryDirectory) throws -> GenericConnect<ContextStrategy.Mixed> {
        let connect = try makeActionConnect(dir)
        try connect.attachPersistentStore(for: StoreConfiguration(type: .postgreSQL, location: try dir.postgreSQLURL("actions")))
        return connect
    }

    @Test(.postgreSQLServer) func entityActionsMergeIntoAPostgreSQLStore() async throws {
        let dir = try TemporaryDirectory()
        let connect = try Self.actionConnect(dir)
        try connect.start()
        let first = try connect.execute(ImportItems([["sku": "a", "title": "A", "price": 1.0], ["sku": "b", "title": "B", "price": 2.0]]))
        try await first.value
        #expect(first.statistics.inserts == 2)
        let second = try connect.execute(ImportItems([["sku": "b", "title": "B2", "price": 2.0], ["sku": "c", "title": "C"]]))
        try await second.value
        #expect(second.statistics.inserts == 1 && second.statistics.updates == 1 && second.statistics.deletes == 1)
        let rows = try connect.persistentStoreCoordinator.fetchDictionaries(FetchRequest<Item>(sortBy: [SortDescriptor(\.sku)]))
        #expect(rows.map { $0["title"] as? String } == ["B2", "C"])
        #expect(connect.persistentStoreCoordinator.persistentStores.map(\.type) == [.postgreSQL])
    }

    /// An action canceled while it runs ends canceled; one canceled before it runs never runs
    /// and saves nothing.
    @Test(.postgreSQLServer) func actionsAreCanceledOverAPostgreSQLStore() async throws {
        let dir = try TemporaryDirectory()
        let connect = try Self.actionConnect(dir)
        try connect.start()
        let running = Blocking(throwsAfterCancel: true)
        let proxy = try connect.execute(running)
        running.started.wait()
        proxy.cancel()
        await proxy.finished
        #expect(proxy.completionStatus == .canceled && running.cancels.withLock { $0 } == 1)

        connect.suspended = true
        let pending = try connect.execute(ImportItems([["sku": "x", "title": "X"]]))
        pending.cancel()
        await pending.finished
        connect.suspended = false
        #expect(pending.completionStatus == .canceled)
        let after = try connect.execute(ImportItems([["sku": "y", "title": "Y"]]))
        try await after.value
        let skus = try connect.persistentStoreCoordinator.fetchDictionaries(FetchRequest<Item>()).map { $0["sku"] as? String }
        #expect(skus == ["y"])
    }
}
