import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// History and remote-change notifications on: what the history kits need.
let kitStoreOptions = StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true)

/// A container on the notes store of a test's directory (history and remote changes on), as
/// one author: its view context and background contexts write as `author`. The store is a
/// SQLite file in the directory, or (`type` `.postgreSQL`) the test's schema `notes`.
final class KitStack: @unchecked Sendable {
    // @unchecked Sendable: `directory` is only kept alive (it removes the files when released).
    let directory: TemporaryDirectory
    let connect: GenericConnect<ContextStrategy.Direct>
    let author: String
    let type: StoreType
    /// The notes store's configuration.
    let configuration: StoreConfiguration

    init(_ directory: TemporaryDirectory, author: String, type: StoreType = .sqlite) throws {
        self.directory = directory
        connect = GenericConnect<ContextStrategy.Direct>(
            name: "Notes", managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        self.author = author
        self.type = type
        configuration =
            type == .postgreSQL
            ? StoreConfiguration(type: .postgreSQL, location: try directory.postgreSQLURL("notes"), options: kitStoreOptions)
            : StoreConfiguration(fileName: "notes.sqlite", options: kitStoreOptions)
        try connect.attachPersistentStore(at: directory.url, for: configuration)
        connect.viewContext.transactionAuthor = author
    }

    /// A kit of this author (logging nothing), started unless `autoStart` is false.
    func kit(
        allAuthors: [String] = ["app", "widget"], cleanStrategy: TransactionCleanStrategy = .byNotification(times: 1),
        autoStart: Bool = true
    ) -> PersistentHistoryTrackingKit {
        PersistentHistoryTrackingKit(
            container: connect, currentAuthor: author, allAuthors: allAuthors, cleanStrategy: cleanStrategy, logLevel: 0,
            autoStart: autoStart)
    }

    var coordinator: PersistentStoreCoordinator { connect.persistentStoreCoordinator }
    var view: ManagedObjectContext { connect.viewContext }
    var store: PersistentStore { coordinator.persistentStores[0] }

    /// Saves what `body` does in a new background context of this author (nil: no author).
    func write(as writer: String?? = .none, _ body: @escaping (ManagedObjectContext) throws -> Void) throws {
        let context = connect.newBackgroundContext()
        context.transactionAuthor = writer ?? author
        try context.performAndWait {
            try body(context)
            try context.save()
        }
    }

    /// Inserts note `sequence` of this author.
    @discardableResult
    func insert(_ sequence: Int, as writer: String?? = .none) throws -> ObjectID {
        let holder = LockedValue<ObjectID?>(nil)
        let author = self.author
        try write(as: writer) { c in
            let note = RemoteNote(context: c)
            note.author = author
            note.sequence = sequence
            note.text = "\(author) \(sequence)"
            try c.obtainPermanentIDs(for: [note])
            holder.withLock { $0 = note.objectID }
        }
        return try #require(holder.withLock { $0 })
    }

    /// Sets the text of every note of `noteAuthor` with `sequence`.
    func setText(_ text: String, of noteAuthor: String, _ sequence: Int) throws {
        try write { c in
            for note in try c.fetch(FetchRequest<RemoteNote>(predicate: #Predicate { $0.author == noteAuthor && $0.sequence == sequence }))
            {
                note.text = text
            }
        }
    }

    /// Deletes every note of `noteAuthor` with `sequence`.
    func delete(of noteAuthor: String, _ sequence: Int) throws {
        try write { c in
            for note in try c.fetch(FetchRequest<RemoteNote>(predicate: #Predicate { $0.author == noteAuthor && $0.sequence == sequence }))
            {
                c.delete(note)
            }
        }
    }

    /// `id` (of any coordinator on the store) as this container's ID.
    func local(_ id: ObjectID) throws -> ObjectID {
        try #require(coordinator.managedObjectID(forURIRepresentation: id.uriRepresentation()))
    }

    /// The view context's note with `id`, faulted in and kept by the context (nil: not there).
    func viewText(_ id: ObjectID) async throws -> String? {
        let local = try local(id)
        return await view.perform { [view] () -> String? in
            guard let note = try? view.existingObject(with: local) as? RemoteNote else { return nil }
            return note.text
        }
    }

    /// The text the view context's registered object `id` has now, without reading the store
    /// (nil: not registered, or deleted).
    func registeredText(_ id: ObjectID) async throws -> String? {
        let local = try local(id)
        return await view.perform { [view] () -> String? in
            guard let note = view.registeredObject(for: local) as? RemoteNote, !note.isDeleted else { return nil }
            return note.text
        }
    }

    /// What the view context shows of note `noteAuthor`/`sequence`: its registered object's text
    /// (registering it from the store the first time); "-" when there is none.
    func shown(_ noteAuthor: String, _ sequence: Int) async throws -> String {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let ids = try reader.performAndWait {
            try reader.fetch(FetchRequest<RemoteNote>(predicate: #Predicate { $0.author == noteAuthor && $0.sequence == sequence }))
                .map(\.objectID)
        }
        return await view.perform { [view] () -> String in
            for id in ids {
                if let note = view.registeredObject(for: id) as? RemoteNote { return note.isDeleted ? "-" : note.text }
                if let note = try? view.existingObject(with: id) as? RemoteNote { return note.text }
            }
            return "-"
        }
    }

    /// The numbers of the store's remaining history transactions.
    func historyNumbers() throws -> [Int64] {
        try coordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?)).transactions.map(\.transactionNumber)
    }

    /// The number of the store's latest transaction.
    func lastNumber() throws -> Int64 {
        try #require(try coordinator.currentPersistentHistoryToken(fromStores: [store])).transactionNumber
    }

    /// Every author's progress in the store.
    func progress() throws -> [String: Int64] {
        (try coordinator.historyProgress(in: store) ?? [:]).mapValues(\.transactionNumber)
    }
}

/// The app's and the widget's containers on the notes store (of `type`) of a new directory.
func kitPair(_ type: StoreType = .sqlite, name: String = #function) throws -> (app: KitStack, widget: KitStack) {
    let directory = try TemporaryDirectory(name)
    return (try KitStack(directory, author: "app", type: type), try KitStack(directory, author: "widget", type: type))
}

/// Reads an `AsyncStream` subscribed to when made, every wait bounded by
/// ``testGuardSeconds``: an element that never comes fails the test (nil) instead of hanging
/// the suite.
final class GuardedStreamReader<Element: Sendable>: Sendable {
    /// Elements received and not read yet.
    private let received = LockedValue<[Element]>([])
    private let arrived = DispatchSemaphore(value: 0)
    private let reader: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let received = self.received, arrived = self.arrived
        reader = Task {
            for await element in stream {
                received.withLock { $0.append(element) }
                arrived.signal()
            }
        }
    }

    deinit { reader.cancel() }

    /// The next element that satisfies `condition` (nil: none within `seconds`).
    func next(seconds: Double = testGuardSeconds, where condition: (Element) -> Bool = { _ in true }) async -> Element? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            while let element = received.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                if condition(element) { return element }
            }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return nil }
            _ = await waitOffPool(arrived, seconds: left)
        }
    }
}

/// Reads the rounds of a history kit's engine (from when it is made). Every wait is bounded by
/// ``testGuardSeconds``: a round that never comes fails the test (nil, false) instead of
/// hanging the suite.
final class RoundReader: Sendable {
    private let reader: GuardedStreamReader<HistoryKitRound>

    init(_ engine: HistoryKitEngine) { reader = GuardedStreamReader(engine.rounds.stream()) }

    /// The next round that satisfies `condition` (nil: none within ``testGuardSeconds``).
    func next(where condition: (HistoryKitRound) -> Bool = { _ in true }) async -> HistoryKitRound? {
        await reader.next(where: condition)
    }

    /// The next round that merged transaction `number` or a later one.
    func through(_ number: Int64) async -> HistoryKitRound? { await next { ($0.lastMerged ?? -1) >= number } }

    /// Waits, round after round, until `condition` holds; false when no round comes within
    /// ``testGuardSeconds`` while it does not.
    func until(_ condition: () async throws -> Bool) async rethrows -> Bool {
        while true {
            if try await condition() { return true }
            guard await next() != nil else { return false }
        }
    }

    /// The next round that merged something.
    func nextMerge() async -> HistoryKitRound? { await next { $0.merged > 0 } }
}

/// A clock the test moves.
final class TestClock: Sendable {
    let now = LockedValue(Date())
    func advance(by seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var function: @Sendable () -> Date { { [now] in now.withLock { $0 } } }
}

/// Collects a kit's messages.
final class KitLogRecorder: PersistentHistoryTrackingKitLoggerProtocol {
    let messages = LockedValue<[(PersistentHistoryTrackingKitLogType, String)]>([])
    func log(type: PersistentHistoryTrackingKitLogType, message: String) { messages.withLock { $0.append((type, message)) } }
    var all: [(PersistentHistoryTrackingKitLogType, String)] { messages.withLock { $0 } }
}
