import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Contexts sharing a query generation on a PostgreSQL store read at once, each on a connection
/// of its own that imported the generation's exported snapshot, and see the same rows.
@Suite struct PostgreSQLSnapshotTests {
    /// Two parties that each wait until the other arrived (at most 60 seconds, so that a broken
    /// overlap fails the test instead of hanging it).
    final class Meeting: @unchecked Sendable {
        // @unchecked Sendable: semaphores only.
        let arrived = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
    }

    /// Saves a new person through `writer`.
    static func insert(_ name: String, _ writer: ManagedObjectContext) throws {
        try writer.performAndWait {
            Person(context: writer).name = name
            try writer.save()
        }
    }

    /// The people's names, as `context` reads them.
    static func names(_ context: ManagedObjectContext) throws -> [String] {
        try context.performAndWait { try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)])).map(\.name) }
    }

    /// A snapshot that is being opened as its store closes (removed from the coordinator) does
    /// not escape the store's detaching: the open fails with `.storeNotAttached` and its
    /// transaction ends, instead of a generation keeping it and reading the store, attached
    /// again, at the old snapshot.
    @Test(.postgreSQLServer, .timeLimit(.minutes(2)), arguments: [false, true])
    func aSnapshotOpenedAsItsStoreClosesIsDetached(importing: Bool) throws {
        let dir = try TemporaryDirectory()
        let (url, _) = try PostgreSQLConnectionTests().storeURL(dir, [:])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let store = try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        let engine = try #require(store.engine as? PostgreSQLStore)
        let exported = importing ? try #require(try engine.openSnapshot() as? PostgreSQLSnapshot) : nil
        engine.openSnapshotHook.withLock { $0 = { [weak engine] in engine?.close() } }
        let error = #expect(throws: CoherenceError.self) {
            if let exported {
                _ = try engine.openSnapshot(importing: exported.identifier)
            } else {
                _ = try engine.openSnapshot()
            }
        }
        #expect(error?.code == .storeNotAttached)
        #expect(engine.openSnapshots.isEmpty)
        #expect(exported?.isDetached ?? true)
    }

    @Test(.postgreSQLServer, .timeLimit(.minutes(2)))
    func twoContextsPinnedToOneGenerationReadAtOnceAndSeeTheSameRows() throws {
        let dir = try TemporaryDirectory()
        let (url, schema) = try PostgreSQLConnectionTests().storeURL(dir, ["pool_size": "4"])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let store = try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        let engine = try #require(store.engine as? PostgreSQLStore)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let insert = { (name: String) throws in try Self.insert(name, writer) }
        try insert("Ada")
        let first = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let second = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try first.performAndWait { try first.setQueryGeneration(from: .current) }
        #expect(try Self.names(first) == ["Ada"])
        let token = first.performAndWait { first.queryGenerationToken }
        try second.performAndWait { try second.setQueryGeneration(from: token) }
        try insert("Bob")

        // Each read of the generation stops on its connection until both are reading; a save
        // commits while both are under way.
        let location = engine.locationDescription
        let meetings = [Meeting(), Meeting()]
        let turn = LockedValue(0)
        let connections = LockedValue<Set<ObjectIdentifier>>([])
        PostgreSQLSnapshot.readHook = { storeLocation, c in
            guard storeLocation == location else { return }
            let i = turn.withLock { n -> Int in
                defer { n += 1 }
                return n
            }
            guard i < 2 else { return }
            connections.withLock { _ = $0.insert(ObjectIdentifier(c)) }
            meetings[i].arrived.signal()
            _ = meetings[i].go.wait(timeout: .now() + 60)
        }
        defer { PostgreSQLSnapshot.readHook = nil }
        // On threads of their own (the reads block until both arrived).
        let read = LockedValue<[Int: [String]]>([:])
        let group = DispatchGroup()
        for (i, context) in [first, second].enumerated() {
            DispatchQueue.global().async(group: group) {
                let found = (try? Self.names(context)) ?? ["failed"]
                read.withLock { $0[i] = found }
            }
        }
        for m in meetings { #expect(m.arrived.wait(timeout: .now() + 60) == .success) }
        try insert("Cy")
        for m in meetings { m.go.signal() }
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(read.withLock { $0 } == [0: ["Ada"], 1: ["Ada"]])
        #expect(connections.withLock { $0.count } == 2)
        #expect(try Self.names(writer) == ["Ada", "Bob", "Cy"])

        // Released: no transaction is left open, and the connections are back in the pool.
        try first.performAndWait { try first.setQueryGeneration(from: nil) }
        try second.performAndWait { try second.setQueryGeneration(from: nil) }
        #expect(try Self.names(first) == ["Ada", "Bob", "Cy"])
        let open = try PostgreSQLTestServer.connection().execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'", [.text(schema)])
        #expect(open.firstInteger == 0)
        #expect(engine.idleReaderCount >= 2)
    }

    /// Another coordinator of the same store (another instance) given the token, encoded and
    /// decoded as it would cross processes, reads the same snapshot while the first holds it.
    @Test(.postgreSQLServer, .timeLimit(.minutes(2)))
    func anotherCoordinatorReadsAtTheSnapshotATokenCarries() throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL()
        func open() throws -> PersistentStoreCoordinator {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
            try coordinator.addPersistentStore(type: .postgreSQL, at: url)
            return coordinator
        }
        let exporter = try open(), importer = try open()
        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: exporter)
        let insert = { (name: String) throws in try Self.insert(name, writer) }
        try insert("Ada")
        let pinned = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: exporter)
        try pinned.performAndWait { try pinned.setQueryGeneration(from: .current) }
        #expect(try Self.names(pinned) == ["Ada"])
        try insert("Bob")
        let token = try #require(pinned.performAndWait { pinned.queryGenerationToken })
        let carried = try JSONDecoder().decode(QueryGenerationToken.self, from: try JSONEncoder().encode(token))
        #expect(carried == token)

        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: importer)
        try other.performAndWait { try other.setQueryGeneration(from: carried) }
        #expect(try Self.names(other) == ["Ada"])
        try insert("Cy")
        #expect(try Self.names(other) == ["Ada"])
        let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: importer)
        #expect(try Self.names(fresh) == ["Ada", "Bob", "Cy"])

        // Once the exporter let it go, the token names nothing any more.
        try pinned.performAndWait { try pinned.setQueryGeneration(from: nil) }
        let late = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: importer)
        let error = #expect(throws: CoherenceError.self) { try late.performAndWait { try late.setQueryGeneration(from: carried) } }
        #expect(error?.code == .invalidQueryGenerationToken)
        #expect(try Self.names(other) == ["Ada"])  // a generation already imported is kept
    }
}
