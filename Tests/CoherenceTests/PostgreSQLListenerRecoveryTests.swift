import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// PostgreSQL connections ended by the server (`pg_terminate_backend`) under the history kit:
/// the remote-change listener's connection, and every connection of a coordinator.
@Suite("PostgreSQL: history kit and lost connections", .postgreSQLServer, .serialized, .timeLimit(.minutes(5)))
struct PostgreSQLListenerRecoveryTests {
    /// Ends the backends running `LISTEN` on the store's channel (every coordinator's listener)
    /// and waits until they are gone; returns how many there were.
    @discardableResult
    static func terminateListeners(of store: PersistentStore) throws -> Int {
        let listen = "LISTEN " + SQLDialect.postgreSQL.quote(PostgreSQLListener.channel(of: store.identifier))
        let admin = try PostgreSQLTestServer.connection()
        let ended = try admin.execute(
            "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()",
            [.text(listen)])
        return Int(ended.firstInteger ?? 0)
    }

    /// A kit whose listening connection the server ended still merges what another coordinator
    /// commits afterwards: the listener connects again and the kit hears the commits (those made
    /// while it was away included), each merged once.
    @Test func aKitKeepsMergingAfterItsListenerWasKilled() async throws {
        let (app, widget) = try kitPair(.postgreSQL)
        let kit = app.kit()
        defer { kit.stop() }
        let merged = LockedValue<[Int64]>([])
        await kit.registerMergeHook { input in
            merged.withLock { $0 += input.transactions.map(\.transactionNumber) }
            return .goOn
        }
        let rounds = RoundReader(kit.engine)
        let first = try widget.insert(1)
        #expect(await rounds.through(try widget.lastNumber()) != nil)
        #expect(try await app.viewText(first) == "widget 1")

        #expect(try Self.terminateListeners(of: app.store) == 2)
        let second = try widget.insert(2)
        let third = try widget.insert(3)
        let last = try widget.lastNumber()
        #expect(await rounds.through(last) != nil)
        #expect(try await app.viewText(second) == "widget 2")
        #expect(try await app.viewText(third) == "widget 3")
        // Once more, with the listener connected again.
        let fourth = try widget.insert(4)
        #expect(await rounds.through(try widget.lastNumber()) != nil)
        #expect(try await app.viewText(fourth) == "widget 4")
        let numbers = merged.withLock { $0 }
        #expect(numbers == Array(Set(numbers)).sorted())
        #expect(numbers.count == 4)
        #expect(try app.progress()["app"] == (try widget.lastNumber()))
    }

    /// Every connection of a coordinator ended by the server: its history token, its next save's
    /// token and the other coordinator's kit go on from where they were (no number skipped or
    /// repeated, nothing merged twice).
    @Test func historyTokensAcrossAReconnect() async throws {
        let dir = try TemporaryDirectory()
        let base = try dir.postgreSQLURL("notes")
        let schema = PostgreSQLTestServer.schema(of: base)
        var components = try #require(URLComponents(url: base, resolvingAgainstBaseURL: false))
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "application_name", value: "w_" + schema)]
        let writerURL = try #require(components.url)
        let app = try KitStack(dir, author: "app", type: .postgreSQL)
        let kit = app.kit()
        defer { kit.stop() }
        let rounds = RoundReader(kit.engine)
        let writer = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        try writer.addPersistentStore(type: .postgreSQL, at: writerURL, options: kitStoreOptions)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: writer)
        context.transactionAuthor = "widget"
        func insert(_ n: Int) throws {
            try context.performAndWait {
                let note = RemoteNote(context: context)
                note.author = "widget"
                note.sequence = n
                note.text = "widget \(n)"
                try context.save()
            }
        }
        try insert(1)
        let before = try #require(try writer.currentPersistentHistoryToken())
        #expect(await rounds.through(before.transactionNumber) != nil)

        let admin = try PostgreSQLTestServer.connection()
        let ended = try admin.execute(
            "SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE application_name = $1", [.text("w_" + schema)])
        #expect((ended.firstInteger ?? 0) >= 2)
        #expect(try writer.currentPersistentHistoryToken() == before)
        try insert(2)
        let after = try #require(try writer.currentPersistentHistoryToken())
        #expect(after.transactionNumber == before.transactionNumber + 1)
        let fetched = try writer.execute(.fetchHistory(after: before)).transactions
        #expect(fetched.map(\.transactionNumber) == [after.transactionNumber])
        let round = await rounds.through(after.transactionNumber)
        #expect(round?.merged == 1)
        #expect(try await app.shown("widget", 2) == "widget 2")
    }
}
