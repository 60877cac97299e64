import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The entities `CoherencePGClient` writes (the same classes there: same model version hash).
final class PGCounter: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var value: Int = 0
}
final class PGItem: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var batch: Int = 0
}

/// The PostgreSQL store with real processes (`CoherencePGClient`): concurrent increments lose
/// nothing, a client killed or cut off mid-save leaves no partial save, and processes hear each
/// other's commits.
@Suite(.serialized) struct PostgreSQLProcessTests {
    /// A store URL in a new schema, with the schema as `application_name`.
    func storeURL(_ dir: TemporaryDirectory) throws -> (url: URL, schema: String) {
        try PostgreSQLConnectionTests().storeURL(dir)
    }

    func open(_ url: URL) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [PGCounter.self, PGItem.self]))
        try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        return (coordinator, ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator))
    }

    func client(_ url: URL, _ arguments: [String]) throws -> WriterProcess {
        try WriterProcess(
            store: URL(fileURLWithPath: "/unused"), author: "client", ["--url", url.absoluteString] + arguments,
            program: "CoherencePGClient")
    }

    func items(_ context: ManagedObjectContext) throws -> [String] {
        try context.performAndWait { try context.fetch(FetchRequest<PGItem>(sortBy: [SortDescriptor(\.name)])).map(\.name) }
    }

    @Test(.postgreSQLServer, .timeLimit(.minutes(5))) func threeProcessesIncrementOneCounterToExactly1500() async throws {
        let dir = try TemporaryDirectory()
        let (url, _) = try storeURL(dir)
        let (_, context) = try open(url)
        try context.performAndWait {
            PGCounter(context: context).name = "shared"
            try context.save()
        }
        let clients = try (0..<3).map { _ in try client(url, ["--increment", "500", "--step"]) }
        for c in clients { #expect(await c.waitForLine("READY")) }
        for c in clients { c.send() }
        for c in clients {
            let done = await c.nextLine(seconds: 240)
            #expect(done?.hasPrefix("DONE") == true)
            let (status, errors) = await c.finish()
            #expect(status == 0, "\(errors)")
        }
        // A new context: the first one holds the counter as it inserted it.
        let (_, fresh) = try open(url)
        let value = try fresh.performAndWait { try fresh.fetch(FetchRequest<PGCounter>()).map(\.value) }
        #expect(value == [1500])
    }

    /// With persistent history on, three processes incrementing one counter record one history
    /// transaction per committed save: numbered one after another across the processes (none
    /// repeated or skipped, whatever the conflicts and retries), each with its process's ID.
    @Test(.postgreSQLServer, .timeLimit(.minutes(5))) func threeProcessesNumberTheirHistoryWithoutGaps() async throws {
        let dir = try TemporaryDirectory()
        let (url, _) = try storeURL(dir)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [PGCounter.self, PGItem.self]))
        try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: StoreOptions(persistentHistoryTracking: true))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            PGCounter(context: context).name = "shared"
            try context.save()
        }
        let increments = 100
        let clients = try (0..<3).map { _ in try client(url, ["--history", "--increment", String(increments), "--step"]) }
        for c in clients { #expect(await c.waitForLine("READY")) }
        for c in clients { c.send() }
        for c in clients {
            #expect(await c.nextLine(seconds: 240)?.hasPrefix("DONE") == true)
            let (status, errors) = await c.finish()
            #expect(status == 0, "\(errors)")
        }
        let total = Int64(1 + 3 * increments)
        let history = try coordinator.execute(.fetchHistory(after: nil)).transactions
        #expect(history.map(\.transactionNumber) == Array(1...total))
        #expect(try coordinator.currentPersistentHistoryToken()?.transactionNumber == total)
        for c in clients {
            let pid = String(c.process.processIdentifier)
            #expect(history.filter { $0.processID == pid }.count == increments)
        }
        let value = try context.performAndWait { () throws -> [Int] in
            context.reset()
            return try context.fetch(FetchRequest<PGCounter>()).map(\.value)
        }
        #expect(value == [3 * increments])
    }

    @Test(.postgreSQLServer, .timeLimit(.minutes(2))) func clientKilledMidSaveLeavesNoPartialSave() async throws {
        let dir = try TemporaryDirectory()
        let (url, _) = try storeURL(dir)
        let (_, context) = try open(url)
        let c = try client(url, ["--insert", "acknowledged", "--hang-save", "50"])
        #expect(await c.waitForLine("SAVED"))
        #expect(await c.waitForLine("COMMITTING"))
        await c.kill()
        #expect(try items(context) == ["acknowledged"])
        // The killed client's transaction is gone: its locks too, so saves go on.
        try context.performAndWait {
            PGItem(context: context).name = "after"
            try context.save()
        }
        #expect(try items(context) == ["acknowledged", "after"])
    }

    /// The server ends the client's connections while a save is under way (as a server crash
    /// or restart does): what was acknowledged stays, the save under way leaves nothing.
    @Test(.postgreSQLServer, .timeLimit(.minutes(2))) func serverEndingTheConnectionMidSaveLosesNothingAcknowledged() async throws {
        let dir = try TemporaryDirectory()
        let (url, schema) = try storeURL(dir)
        let (_, context) = try open(url)
        _ = try items(context)
        let c = try client(url, ["--insert", "acknowledged", "--hang-save", "50"])
        #expect(await c.waitForLine("SAVED"))
        #expect(await c.waitForLine("COMMITTING"))
        let admin = try PostgreSQLTestServer.connection()
        let ended = try admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1 AND pid <> ALL($2::int[])",
            [.text(schema), .text("{\(try ownBackends(schema, context: context))}")])
        #expect((ended.firstInteger ?? 0) >= 1)
        await c.kill()
        #expect(try items(context) == ["acknowledged"])
    }

    /// The backends of this process's own store (left alone when the client's are ended).
    func ownBackends(_ schema: String, context: ManagedObjectContext) throws -> String {
        let store = try #require(context.persistentStoreCoordinator.persistentStores.first?.engine as? PostgreSQLStore)
        let reader = try store.takeReader()
        defer { store.returnReader(reader) }
        let writer = try store.writerConnection()
        var pids: [String] = []
        for c in [reader, writer] {
            if let pid = try c.execute("SELECT pg_backend_pid()").firstInteger { pids.append(String(pid)) }
        }
        return pids.joined(separator: ",")
    }

    @Test(.postgreSQLServer, .timeLimit(.minutes(2))) func twoProcessesSeeEachOthersChanges() async throws {
        let dir = try TemporaryDirectory()
        let (url, _) = try storeURL(dir)
        _ = try open(url)
        let listener = try client(url, ["--await-item", "from-writer"])
        #expect(await listener.waitForLine("READY"))
        let writer = try client(url, ["--insert", "from-writer"])
        #expect(await writer.waitForLine("SAVED"))
        let heard = await listener.waitForLine("HEARD")
        #expect(heard)
        #expect(await writer.finish().status == 0)
        if heard { #expect(await listener.finish().status == 0) } else { await listener.kill() }
    }
}
