import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// Remote-change notifications between coordinators of one PostgreSQL store, through
/// `LISTEN`/`NOTIFY`: each hears the others' commits, never its own.
@Suite struct PostgreSQLRemoteChangeTests {
    func open(_ url: URL, notify: Bool = true) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: StoreOptions(remoteChangeNotificationPost: notify))
        return (coordinator, ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator))
    }

    func save(_ context: ManagedObjectContext, _ name: String) throws {
        try context.performAndWait {
            Person(context: context).name = name
            try context.save()
        }
    }

    // (The time limits are wide: in the parallel suite on two cores, an async test resumes only
    // when a cooperative thread is free, and synchronous tests hold both for minutes.)
    @Test(.postgreSQLServer, .timeLimit(.minutes(10))) func coordinatorsHearEachOthersCommitsButNotTheirOwn() async throws {
        let dir = try TemporaryDirectory()
        var components = try #require(URLComponents(url: try dir.postgreSQLURL(), resolvingAgainstBaseURL: false))
        components.password = "hunter2secret"
        let url = try #require(components.url)
        let (a, contextA) = try open(url)
        let (b, contextB) = try open(url)
        let store = try #require(a.persistentStores.first)
        var changesA = a.remoteChanges.makeAsyncIterator()
        var changesB = b.remoteChanges.makeAsyncIterator()
        let posted = LockedValue<[ObjectIdentifier]>([])
        let observer = NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: nil, queue: nil) { note in
            if let sender = note.object as? PersistentStoreCoordinator, sender === a || sender === b {
                posted.withLock { $0.append(ObjectIdentifier(sender)) }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }

        // A commits: B hears it (with the store's identity, its URL without the password).
        try save(contextA, "Ada")
        let first = try #require(await changesB.next())
        #expect(first.storeIdentifier == store.identifier)
        #expect(first.storeURL.absoluteString.contains("hunter2secret") == false)
        #expect(first.storeURL.absoluteString.contains("schema=") == true)
        // B's next fetch reads A's row.
        #expect(try contextB.performAndWait { try contextB.count(for: FetchRequest<Person>()) } == 1)
        // A's listener has handled its own commit's notification without posting it.
        let engineA = try #require(store.engine as? PostgreSQLStore)
        while engineA.notificationsHandled < 1 { await Task.yield() }
        #expect(posted.withLock { $0 } == [ObjectIdentifier(b)])

        // B commits: A hears B's commit, and only B's: A's own was not a remote change.
        try save(contextB, "Grace")
        let second = try #require(await changesA.next())
        #expect(second.storeIdentifier == store.identifier)
        try save(contextA, "Edsger")
        _ = try #require(await changesB.next())
        #expect(posted.withLock { $0 } == [ObjectIdentifier(b), ObjectIdentifier(a), ObjectIdentifier(b)])
    }

    /// With persistent history, each commit's notification carries its history token: a
    /// listener hears the token the committing store object reports as its last, and a
    /// coordinator posts the change with it; history fetched after the previous token is that
    /// one transaction.
    @Test(.postgreSQLServer, .timeLimit(.minutes(10))) func notificationsCarryTheHistoryToken() async throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL()
        func open(notify: Bool) throws -> PersistentStoreCoordinator {
            let c = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
            try c.addPersistentStore(
                type: .postgreSQL, at: url, options: StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: notify))
            return c
        }
        let a = try open(notify: true), b = try open(notify: true), raw = try open(notify: false)
        let contextA = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: a)
        contextA.transactionAuthor = "writer"
        let engineA = try #require(a.persistentStores.first?.engine)
        // The tokens as the notifications carry them (no fallback to the store's current token).
        let (tokens, heard) = AsyncStream<PersistentHistoryToken?>.makeStream()
        let listening = try #require(raw.persistentStores.first?.engine as? PostgreSQLStore)
        try listening.startRemoteChanges { heard.yield($0) }
        var carried = tokens.makeAsyncIterator()
        var changesB = b.remoteChanges.makeAsyncIterator()
        var previous = try b.currentPersistentHistoryToken()
        for name in ["Ada", "Grace"] {
            try save(contextA, name)
            let committed = try #require(engineA.lastCommittedHistoryToken)
            #expect(await carried.next() == committed)
            let change = try #require(await changesB.next())
            #expect(change.historyToken == committed)
            let transactions = try b.execute(.fetchHistory(after: previous)).transactions
            #expect(transactions.map(\.token) == [committed])
            #expect(transactions.first?.author == "writer")
            previous = committed
        }
        // A batch request's commit carries its transaction's token too.
        var request = BatchUpdateRequest<Person>(propertiesToUpdate: ["age": 7])
        request.resultType = .objectIDs
        #expect(try a.execute(request).updatedObjectIDs.count == 2)
        let batch = try #require(engineA.lastCommittedHistoryToken)
        #expect(previous.map { batch > $0 } == true)
        #expect(await carried.next() == batch)
        #expect(try #require(await changesB.next()).historyToken == batch)
        #expect(try b.execute(.fetchHistory(after: previous)).transactions.first?.changes?.count == 2)
    }

    /// Without the option a store neither sends nor listens.
    @Test(.postgreSQLServer) func withoutTheOptionNothingIsSent() throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL()
        let (a, _) = try open(url, notify: false)
        let store = try #require(a.persistentStores.first?.engine as? PostgreSQLStore)
        #expect(store.notifiesCommits == false)
        #expect(store.isListening == false)
        let (b, _) = try open(url)
        let other = try #require(b.persistentStores.first?.engine as? PostgreSQLStore)
        #expect(other.notifiesCommits)
        #expect(other.isListening)
        try b.remove(try #require(b.persistentStores.first))
        #expect(other.isListening == false)
    }
}
