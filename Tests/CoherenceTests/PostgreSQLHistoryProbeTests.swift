import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Fault probes on persistent history, on PostgreSQL against the SQLite store's answers: history
/// requests on a store that does not track it, a connection lost during a history fetch, and
/// history deletes while another process writes.
@Suite struct PostgreSQLHistoryProbeTests {
    /// What each history request gives on a store opened without history tracking: the error
    /// code, or what it returned.
    static func untrackedAnswers(_ c: PersistentStoreCoordinator) throws -> [String] {
        let store = try #require(c.persistentStores.first)
        func code(_ body: () throws -> Any?) -> String {
            do {
                return "returned \(String(describing: try body()))"
            } catch let error as CoherenceError {
                return "\(error.code)"
            } catch {
                return "\(error)"
            }
        }
        let token = PersistentHistoryToken(storeIdentifier: store.identifier, transactionNumber: 1)
        var inStore = PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)
        inStore.affectedStores = [store]
        var count = PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)
        count.resultType = .count
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        return [
            code { try c.execute(.fetchHistory(after: nil as PersistentHistoryToken?)) },
            code { try c.execute(.fetchHistory(after: token)) },
            code { try c.execute(.fetchHistory(after: Date.distantPast)) },
            code { try c.execute(inStore) },
            code { try c.execute(count) },
            code { try c.execute(.deleteHistory(before: nil as PersistentHistoryToken?)) },
            code { try c.execute(.deleteHistory(before: token)) },
            code { try context.performAndWait { try context.execute(.fetchHistory(after: nil as PersistentHistoryToken?)) } },
            code { try c.currentPersistentHistoryToken(fromStores: [store]) },
            code { try c.currentPersistentHistoryToken(fromStores: nil) }
        ]
    }

    /// History requests on a store opened without history tracking fail with the same code on
    /// every store type (`.invalidRequest`: the request needs a store that tracks history), and
    /// the current token is nil. A store that recorded history, opened without tracking, is
    /// refused as it opens (`.historyTrackingRequired`) and left as it was.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func historyRequestsWithoutTrackingFailAlike(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        try c.addPersistentStore(type: type, at: try historyStoreURL(type, in: dir))
        let answers = try Self.untrackedAnswers(c)
        #expect(answers == Array(repeating: "invalidRequest", count: 8) + ["returned nil", "returned nil"])
        guard type != .inMemory else { return }

        let url = try historyStoreURL(type, in: dir, file: "tracked.sqlite")
        let tracked = try makeHistoryCoordinator(type, in: dir, file: "tracked.sqlite")
        try tracked.execute(BatchInsertRequest<HNote>(objects: [["code": "a", "rank": 1]]))
        let numbers = try allHistory(tracked).map(\.transactionNumber)
        let plain = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        let refused = #expect(throws: CoherenceError.self) { try plain.addPersistentStore(type: type, at: url) }
        #expect(refused?.code == .historyTrackingRequired)
        #expect(plain.persistentStores.isEmpty)
        let reopened = try makeHistoryCoordinator(type, in: dir, file: "tracked.sqlite")
        #expect(try allHistory(reopened).map(\.transactionNumber) == numbers)
        #expect(numbers.count == 1)
    }

    /// A PostgreSQL store with history in a schema of `dir`, `count` notes saved one per
    /// transaction, its URL carrying a password and the schema as the connections'
    /// `application_name`; the store object.
    static func historyStore(_ dir: TemporaryDirectory, notes count: Int) throws -> (PersistentStoreCoordinator, PostgreSQLStore) {
        var components = try #require(URLComponents(url: try dir.postgreSQLURL("history"), resolvingAgainstBaseURL: false))
        components.password = PostgreSQLFaultProbeTests.password
        // The schema as the connections' application name: the test finds its backends by it.
        let schema = try #require(components.queryItems?.first { $0.name == "schema" }?.value)
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "application_name", value: schema)]
        let c = PersistentStoreCoordinator(managedObjectModel: try makeHistoryModel())
        let store = try c.addPersistentStore(type: .postgreSQL, at: try #require(components.url), options: historyOptions)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            for n in 0..<count {
                HNote(context: context).code = "n\(n)"
                try context.save()
            }
        }
        return (c, try #require(store.engine as? PostgreSQLStore))
    }

    /// Ends the server backend of `c` and waits until it is gone.
    static func terminate(_ c: PostgreSQLConnection) throws {
        let pid = try #require(try c.execute("SELECT pg_backend_pid()").firstInteger)
        _ = try PostgreSQLTestServer.connection().execute("SELECT pg_terminate_backend($1::int, 10000)", [.integer(pid)])
    }

    /// The connection lost during a history fetch — the reader connections ended before it, its
    /// connection ended inside its transaction once, or on every attempt — is never a crash: the
    /// fetch runs once more on a new connection and answers; when that one is lost too it fails
    /// with `.connectionLost` (no password in it), and the next fetch reconnects and answers.
    /// History numbering goes on without a gap.
    @Test(.postgreSQLServer) func aConnectionLostDuringAHistoryFetch() throws {
        let dir = try TemporaryDirectory()
        let (c, store) = try Self.historyStore(dir, notes: 3)
        let numbers = try allHistory(c).map(\.transactionNumber)
        #expect(numbers.count == 3)

        // Before the fetch: the store's idle connections are gone.
        let admin = try PostgreSQLTestServer.connection()
        let schema = PostgreSQLTestServer.schema(of: try dir.postgreSQLURL("history"))
        let ended = try admin.execute(
            "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE application_name = $1", [.text(schema)])
        #expect((ended.firstInteger ?? 0) > 0)
        #expect(try allHistory(c).map(\.transactionNumber) == numbers)

        // Inside the fetch, once: the second attempt answers.
        let calls = LockedValue(0)
        store.historyFetchHook.withLock {
            $0 = { connection in
                if calls.withLock({
                    $0 += 1; return $0
                }) == 1 {
                    try Self.terminate(connection)
                }
            }
        }
        #expect(try allHistory(c).map(\.transactionNumber) == numbers)
        #expect(calls.withLock { $0 } == 2)

        // Inside the fetch, on every attempt: a typed error.
        calls.withLock { $0 = 0 }
        store.historyFetchHook.withLock {
            $0 = { connection in
                calls.withLock { $0 += 1 }
                try Self.terminate(connection)
            }
        }
        let lost = #expect(throws: CoherenceError.self) { try c.execute(.fetchHistory(after: nil as PersistentHistoryToken?)) }
        #expect(lost?.code == .connectionLost)
        #expect(calls.withLock { $0 } == 2)
        for text in PostgreSQLFaultProbeTests().texts(lost) { #expect(!text.contains(PostgreSQLFaultProbeTests.password)) }

        // The next fetch reconnects; the next save continues the numbering.
        store.historyFetchHook.withLock { $0 = nil }
        #expect(try allHistory(c).map(\.transactionNumber) == numbers)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            HNote(context: context).code = "after"
            try context.save()
        }
        #expect(try allHistory(c).map(\.transactionNumber) == numbers + [(numbers.last ?? 0) + 1])
    }

    /// `deleteHistory(before:)` — by token and by date, after each of another process's saves —
    /// while that process (`CoherenceKitAuthor`) keeps saving with history: its transactions are
    /// numbered one after another (none lost, none twice), each delete removes only what came
    /// before its point, and the history left is always one unbroken run up to the writer's
    /// latest save.
    @Test(arguments: storedTypes)
    func deletingHistoryWhileAnotherProcessWrites(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app", type: type)
        try app.insert(0)
        let writer = try WriterProcess(
            store: dir.file("notes.sqlite"), author: "widget", ["--authors", "app,widget", "--batch"] + app.serverArguments,
            program: "CoherenceKitAuthor")
        #expect(await writer.waitForLine("READY"))
        let saves = 60
        // Every command at once: the writer saves while this process deletes.
        for n in 1...saves { writer.send("insert \(n)") }
        var saved: [Int64] = []
        for n in 1...saves {
            guard let line = await writer.nextLine(), line.hasPrefix("SAVED "), let number = Int64(line.dropFirst(6)) else {
                Issue.record("save \(n) of the writer did not answer")
                break
            }
            saved.append(number)
            // The delete point: the save just reported, by its token or by its timestamp. (Every
            // earlier delete was before an earlier save: that save is still there.)
            let before = try app.coordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?)).transactions
            guard let point = before.first(where: { $0.transactionNumber == number }) else {
                Issue.record("save \(n) (transaction \(number)) is gone before its delete: \(before.map(\.transactionNumber))")
                break
            }
            let byToken = n % 2 == 0
            try app.coordinator.execute(byToken ? .deleteHistory(before: point.token) : .deleteHistory(before: point.timestamp))
            // Left: the save and everything after it (the writer's saves made meanwhile
            // included), in one unbroken run; by timestamp, also what shares its timestamp.
            let left = try app.coordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?)).transactions
            let numbers = left.map(\.transactionNumber)
            let first = numbers.first ?? 0, last = numbers.last ?? 0
            #expect(numbers == Array(first...last), "a hole in the history after delete \(n) at \(number): \(numbers)")
            #expect(numbers.contains(number) && last >= (before.last?.transactionNumber ?? 0))
            if byToken {
                #expect(first == number, "delete \(n) by token \(number) left \(numbers)")
            } else {
                #expect(left.allSatisfy { $0.transactionNumber >= number || $0.timestamp >= point.timestamp })
            }
        }
        writer.send("quit")
        #expect(await writer.waitForLine("DONE"))
        let result = await writer.finish()
        #expect(result.status == 0, "the writer failed: \(result.errors)")
        #expect(saved.count == saves)
        let start = try #require(saved.first)
        #expect(saved == Array(start..<(start + Int64(saves))))
        #expect(try app.lastNumber() == saved.last)
        #expect(try app.historyNumbers() == [try #require(saved.last)])
        let view = app.view
        let count = try await view.perform { try view.count(for: FetchRequest<RemoteNote>()) }
        #expect(count == saves + 1)
    }
}
