import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// PersistentHistoryTrackingKit on Coherence: two or three containers (each its own
/// coordinator, as processes have) on one store, each with its author.
@Suite("History kit", .timeLimit(.minutes(10)))
struct HistoryKitTests {
    /// Another author's insert, update and delete reach the view context through the kit: a
    /// registered object keeps its old value until the kit merges (a merge hook holds the
    /// merge), then shows the new one; inserts are announced; deletes applied; the kit never
    /// merges its own author's saves.
    @Test(arguments: storedTypes)
    func mergesOthersIntoTheViewContext(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        let kit = app.kit()
        defer { kit.stop() }
        let rounds = RoundReader(kit.engine)
        let authorsSeen = LockedValue<[String?]>([])
        await kit.registerMergeHook { input in
            authorsSeen.withLock { $0 += input.transactions.map(\.author) }
            return .goOn
        }
        var events = app.view.events.makeAsyncIterator()

        // Insert: announced to the view context.
        let id = try widget.insert(1)
        #expect(await rounds.nextMerge()?.merged == 1)
        var announced = false
        while let event = await events.next() {
            if try event.inserted.contains(app.local(id)) {
                announced = true
                break
            }
        }
        #expect(announced)
        #expect(try await app.viewText(id) == "widget 1")

        // Update: the registered object keeps its value until the kit merges.
        let gate = ActLatch()
        let held = ActLatch()
        let hook = await kit.registerMergeHook { _ in
            held.open()
            await gate.wait()
            return .goOn
        }
        try widget.setText("changed", of: "widget", 1)
        await held.wait()
        #expect(try await app.registeredText(id) == "widget 1")
        gate.open()
        #expect(await rounds.nextMerge() != nil)
        #expect(try await app.registeredText(id) == "changed")
        #expect(await kit.removeMergeHook(id: hook))

        // The app's own saves are never merged by its kit.
        try app.insert(1)
        try widget.delete(of: "widget", 1)
        #expect(await rounds.nextMerge() != nil)
        #expect(try await app.registeredText(id) == nil)
        #expect(authorsSeen.withLock { $0 }.allSatisfy { $0 == "widget" })
        #expect(authorsSeen.withLock { $0 }.count == 3)
        #expect(try app.progress()["app"] == app.lastNumber())
    }

    /// The kit's progress is the number of the last transaction it merged, kept in the store:
    /// readable through another coordinator.
    @Test(arguments: storedTypes)
    func progressIsKeptInTheStore(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        let dir = app.directory
        let kit = app.kit(cleanStrategy: .none)
        defer { kit.stop() }
        let rounds = RoundReader(kit.engine)
        try widget.insert(1)
        try widget.insert(2)
        let last = try widget.lastNumber()
        #expect(await rounds.through(last) != nil)
        let third = try KitStack(dir, author: "other", type: type)
        #expect(try third.progress()["app"] == widget.historyNumbers().last)
        #expect(try third.progress()["widget"] == nil)
    }

    /// A store's progress table: readable by another coordinator, forward only, per author;
    /// an in-memory store keeps none.
    @Test(arguments: storedTypes)
    func storeProgressMovesForwardOnly(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app", type: type)
        let other = try KitStack(dir, author: "other", type: type)
        #expect(try app.progress().isEmpty)
        func record(_ n: Int64, _ author: String = "app") throws {
            try app.coordinator.recordHistoryProgress(
                HistoryProgress(transactionNumber: n, timestamp: Date(timeIntervalSinceReferenceDate: Double(n)), updated: Date()),
                author: author, in: app.store)
        }
        try record(5)
        try record(3)
        try record(1, "widget")
        #expect(try other.progress() == ["app": 5, "widget": 1])
        #expect(try other.coordinator.historyProgress(in: other.store)?["app"]?.timestamp == Date(timeIntervalSinceReferenceDate: 5))
        try other.coordinator.removeHistoryProgress(author: "widget", in: other.store)
        #expect(try app.progress() == ["app": 5])
        let memory = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        let store = try memory.addPersistentStore(type: .inMemory, at: nil, options: kitStoreOptions)
        #expect(try memory.historyProgress(in: store) == nil)
    }

    /// Each clean strategy's exact sequence, with the kit's clock.
    @Test func cleanStrategiesDecideAsTheSeed() throws {
        let dir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app")
        func sequence(_ strategy: TransactionCleanStrategy, steps: [TimeInterval] = Array(repeating: 0, count: 7)) -> [Bool] {
            let clock = TestClock()
            let kit = PersistentHistoryTrackingKit(
                container: app.connect, currentAuthor: "app", allAuthors: ["app"], cleanStrategy: strategy, logLevel: 0, autoStart: false,
                clock: clock.function)
            return steps.map { step in
                clock.advance(by: step)
                return kit.shouldClean()
            }
        }
        #expect(sequence(.none) == [false, false, false, false, false, false, false])
        #expect(sequence(.byNotification(times: 1)) == [true, true, true, true, true, true, true])
        #expect(sequence(.byNotification(times: 0)) == [true, true, true, true, true, true, true])
        #expect(sequence(.byNotification(times: 3)) == [true, false, false, true, false, false, true])
        #expect(sequence(.byNotification(times: 2)) == [true, false, true, false, true, false, true])
        // First: yes; then only when more than 10 s passed since the last clean (strictly).
        #expect(sequence(.byDuration(seconds: 10), steps: [0, 5, 5, 0.5, 9, 1, 11]) == [true, false, false, true, false, false, true])
        #expect(sequence(.byDuration(seconds: 10), steps: [0, 5, 5, 0.5, 9, 1.5, 11]) == [true, false, false, true, false, true, true])
    }

    /// Cleaning waits for every required author with progress; batch authors never hold it
    /// back; authors that never ran are not waited for (the seed's V1 rule).
    @Test(arguments: storedTypes)
    func cleaningWaitsForTheAuthorsWithProgress(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        let dir = app.directory
        let importer = try KitStack(dir, author: "importer", type: type)
        func widgetMerged(_ number: Int64) throws {
            try widget.coordinator.recordHistoryProgress(
                HistoryProgress(transactionNumber: number, timestamp: Date(), updated: Date()), author: "widget", in: widget.store)
        }
        try widgetMerged(0)
        // The importer's progress (it merged nothing) does not count: it is a batch author.
        try importer.coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: 0, timestamp: Date(), updated: Date()), author: "importer", in: importer.store)
        let appKit = PersistentHistoryTrackingKit(
            container: app.connect, currentAuthor: "app", allAuthors: ["app", "widget", "importer", "never"], batchAuthors: ["importer"],
            logLevel: 0)
        defer { appKit.stop() }
        let appRounds = RoundReader(appKit.engine)
        try importer.insert(1)
        try widget.insert(1)
        try importer.insert(2)
        let first = try app.lastNumber()
        #expect(await appRounds.through(first) != nil)
        let numbers = try app.historyNumbers()
        #expect(numbers.count == 3)  // the widget merged nothing yet
        // The widget merged its first transaction: nothing before it to delete.
        try widgetMerged(numbers[0])
        try importer.insert(3)
        let second = try app.lastNumber()
        #expect(await appRounds.through(second)?.cleaned == 0)
        // The widget merged the third: the first two go; the importer never holds cleaning back,
        // and "never", which has no progress, is not waited for.
        try widgetMerged(numbers[2])
        try importer.insert(4)
        let third = try app.lastNumber()
        #expect(await appRounds.through(third)?.cleaned == 2)
        #expect(try app.historyNumbers().first == numbers[2])
    }

    /// `maximumDuration` forcibly cleans older transactions, whatever the authors merged (the
    /// clock is the kit's); an author whose progress was cleaned away recovers: it refreshes,
    /// merges from the oldest remaining transaction and logs it.
    @Test(arguments: storedTypes)
    func maximumDurationCleansAndLaggingAuthorsRecover(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        let clock = TestClock()
        let appKit = PersistentHistoryTrackingKit(
            container: app.connect, currentAuthor: "app", allAuthors: ["app", "widget"], maximumDuration: 100, logLevel: 0,
            clock: clock.function)
        defer { appKit.stop() }
        let appRounds = RoundReader(appKit.engine)
        // The widget merged nothing after the app's first transaction.
        let first = try app.insert(1)
        try widget.coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: try app.historyNumbers()[0], timestamp: Date(), updated: Date()), author: "widget",
            in: widget.store)
        try app.insert(2)
        try widget.insert(1)
        #expect(await appRounds.nextMerge()?.cleaned == 0)
        clock.advance(by: 10_000)  // far past the timestamps written meanwhile
        try widget.insert(2)
        let round = await appRounds.nextMerge()
        #expect((round?.cleaned ?? 0) >= 3)  // everything older than 100 s on the kit's clock
        // The widget's kit starts behind the deleted history: it recovers.
        let logs = KitLogRecorder()
        let widgetKit = PersistentHistoryTrackingKit(
            container: widget.connect, currentAuthor: "widget", allAuthors: ["app", "widget"], cleanStrategy: .none, logger: logs,
            logLevel: 1)
        defer { widgetKit.stop() }
        let widgetRounds = RoundReader(widgetKit.engine)
        #expect(try await widget.viewText(first) == "app 1")
        try app.insert(3)
        let recovered = await widgetRounds.next { $0.recovered }
        #expect((recovered?.merged ?? 0) >= 1)
        #expect(logs.all.contains { $0.0 == .notice && $0.1.contains("oldest remaining") })
        #expect(try widget.progress()["widget"] == app.historyNumbers().last)
    }

    /// Kits of two authors cleaning at once, while an author's progress moves: every
    /// transaction from that author's progress on is kept.
    @Test(arguments: storedTypes)
    func concurrentCleanersKeepWhatAnAuthorNeeds(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        let dir = app.directory
        let importer = try KitStack(dir, author: "importer", type: type)
        for n in 1...12 { try importer.insert(n) }
        let numbers = try app.historyNumbers()
        func record(_ stack: KitStack, _ number: Int64) throws {
            try stack.coordinator.recordHistoryProgress(
                HistoryProgress(transactionNumber: number, timestamp: Date(), updated: Date()), author: stack.author, in: stack.store)
        }
        try record(app, numbers[11])
        try record(widget, numbers[2])
        let kits = [app, widget].map {
            PersistentHistoryTrackingKit(
                container: $0.connect, currentAuthor: $0.author, allAuthors: ["app", "widget"], cleanStrategy: .none, logLevel: 0,
                autoStart: false)
        }
        let cleaners = kits.map { $0.cleanerBuilder() }
        await withTaskGroup(of: Void.self) { group in
            for cleaner in cleaners {
                group.addTask { for _ in 0..<20 { cleaner() } }
            }
            group.addTask {
                for i in 3...8 { try? record(widget, numbers[i]) }
            }
        }
        let final = try #require(try app.progress()["widget"])
        #expect(final == numbers[8])
        let left = try app.historyNumbers()
        #expect(left.first ?? 0 <= final)
        #expect(Set(numbers.filter { $0 >= final }).isSubset(of: Set(left)))
        #expect(cleaners[0]() == (left.first == final ? 0 : left.filter { $0 < final }.count))
        #expect(try app.historyNumbers().first == final)
    }

    /// With `.none` nothing is cleaned automatically; the manual cleaner deletes what every
    /// author merged.
    @Test func cleanerBuilderCleansOnDemand() async throws {
        let (app, widget) = try kitPair()
        let kit = app.kit(cleanStrategy: .none)
        defer { kit.stop() }
        let rounds = RoundReader(kit.engine)
        for n in 1...3 { try widget.insert(n) }
        let last = try widget.lastNumber()
        #expect(await rounds.through(last) != nil)
        #expect(try app.historyNumbers().count == 3)
        let cleaner = kit.cleanerBuilder()
        #expect(cleaner.logLevel == 0)
        #expect(cleaner() == 2)
        #expect(try app.historyNumbers().count == 1)
    }

    /// mergePendingHistory() catches up at once with what was written before the kit started
    /// (no remote change comes for it); a stopped kit merges nothing.
    @Test func mergePendingHistoryCatchesUp() async throws {
        let (app, widget) = try kitPair()
        let id = try widget.insert(1)
        try widget.insert(2)
        let kit = app.kit(autoStart: false)
        let handed = LockedValue(0)
        await kit.registerMergeHook { input in
            handed.withLock { $0 += input.transactions.count }
            return .goOn
        }
        #expect(await kit.mergePendingHistory() == 0)
        kit.start()
        // Starting records the kit's progress, a commit the kit hears: a round of its own may
        // merge both transactions before this call (rounds are serialized, so never both).
        let merged = await kit.mergePendingHistory()
        #expect(merged == 2 || merged == 0)
        #expect(try app.progress()["app"] == widget.lastNumber())
        #expect(await kit.mergePendingHistory() == 0)
        #expect(handed.withLock { $0 } == 2)
        #expect(try await app.viewText(id) == "widget 1")
        kit.stop()
    }

    /// start() twice makes one listener; stop() stops merging; start() again merges what came
    /// meanwhile with the next change.
    @Test func startStopStart() async throws {
        let (app, widget) = try kitPair()
        let subscribersBefore = app.coordinator.remoteChangeBroadcaster.subscriberCount
        let kit = app.kit()
        kit.start()
        kit.start()
        #expect(kit.isRunning)
        // At most one listener more (another test helper's stream may end meanwhile, so not "==").
        #expect(app.coordinator.remoteChangeBroadcaster.subscriberCount <= subscribersBefore + 1)
        let rounds = RoundReader(kit.engine)
        let id = try widget.insert(1)
        #expect(await rounds.nextMerge() != nil)
        #expect(try await app.viewText(id) == "widget 1")
        kit.stop()
        kit.stop()
        #expect(!kit.isRunning)
        try widget.setText("while stopped", of: "widget", 1)
        // A change heard by another listener on the same coordinator: the kit did nothing.
        let heard = RemoteChangeRecorder(app.coordinator)
        try widget.insert(2)
        #expect(await heard.waitForStreamed(1))
        #expect(try await app.registeredText(id) == "widget 1")
        kit.start()
        try widget.insert(3)
        // The three transactions made while stopped or after the restart, in one round or more
        // (the restart's catch-up round may run before the last insert is heard).
        var merged = 0
        while merged < 3, let round = await rounds.nextMerge() { merged += round.merged }
        #expect(merged == 3)
        #expect(try await app.registeredText(id) == "while stopped")
        kit.stop()
    }

    /// Releasing a started kit stops it: its listener does not keep it alive.
    @Test func releasingAStartedKitStopsIt() throws {
        let dir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app")
        weak var released: PersistentHistoryTrackingKit?
        let engine: HistoryKitEngine
        do {
            let kit = app.kit()
            released = kit
            engine = kit.engine
            #expect(engine.isActive)
        }
        #expect(released == nil)
        #expect(!engine.isActive)
    }

    /// stop() while a round is in its merge hooks: nothing is merged or recorded.
    @Test func stopStopsARoundAtOnce() async throws {
        let (app, widget) = try kitPair()
        let kit = app.kit()
        let rounds = RoundReader(kit.engine)
        let id = try widget.insert(1)
        #expect(await rounds.nextMerge() != nil)
        #expect(try await app.viewText(id) == "widget 1")
        let progress = try app.progress()["app"]
        let gate = ActLatch(), held = ActLatch()
        await kit.registerMergeHook { _ in
            held.open()
            await gate.wait()
            return .goOn
        }
        try widget.setText("after stop", of: "widget", 1)
        await held.wait()
        kit.stop()
        gate.open()
        let round = await rounds.next { $0.stopped }
        #expect(round?.merged == 0)
        #expect(try await app.registeredText(id) == "widget 1")
        #expect(try app.progress()["app"] == progress)
    }

    /// Observers get each transaction's changes grouped by entity and operation, deletes with
    /// tombstones; merge hooks run in order (`before:` first), `.finish` skips the kit's merge,
    /// and a hook that throws leaves progress so the same transactions come again.
    @Test func observersAndMergeHooks() async throws {
        let (app, widget) = try kitPair()
        let kit = app.kit()
        defer { kit.stop() }
        let rounds = RoundReader(kit.engine)
        let observed = LockedValue<[[HookContext]]>([])
        let deletes = LockedValue<[[HookContext]]>([])
        await kit.registerObserver(entityName: "RemoteNote", operation: .insert) { changes in observed.withLock { $0.append(changes) } }
        await kit.registerObserver(entityName: "RemoteNote", operation: .delete) { changes in deletes.withLock { $0.append(changes) } }
        let removed = await kit.registerObserver(entityName: "RemoteNote", operation: .update) { _ in
            Issue.record("removed observer called")
        }
        #expect(await kit.removeObserver(id: removed))
        #expect(await !kit.removeObserver(id: removed))
        let order = LockedValue<[String]>([])
        let second = await kit.registerMergeHook { _ in
            order.withLock { $0.append("second") }
            return .goOn
        }
        await kit.registerMergeHook(before: second) { _ in
            order.withLock { $0.append("first") }
            return .goOn
        }
        try widget.write { c in
            for n in 1...2 {
                let note = RemoteNote(context: c)
                note.author = "widget"
                note.sequence = n
            }
        }
        #expect(await rounds.nextMerge() != nil)
        #expect(order.withLock { $0 } == ["first", "second"])
        #expect(observed.withLock { $0.map(\.count) } == [2])
        #expect(observed.withLock { $0.first?.first?.author } == "widget")

        // A hook that throws: no progress; the same transaction comes again.
        struct Refused: Error {}
        let failing = await kit.registerMergeHook { _ in throw Refused() }
        let progress = try app.progress()["app"]
        try widget.delete(of: "widget", 1)
        #expect(await rounds.next()?.aborted == true)
        #expect(try app.progress()["app"] == progress)
        #expect(await kit.removeMergeHook(id: failing))
        // .finish: the kit's own merge is skipped, progress recorded.
        let finished = LockedValue(0)
        await kit.registerMergeHook(before: second) { input in
            finished.withLock { $0 += input.transactions.count }
            return .finish
        }
        try widget.insert(3)
        #expect(await rounds.nextMerge()?.merged == 2)  // the delete again, and the insert
        #expect(finished.withLock { $0 } == 2)
        #expect(order.withLock { $0 } == ["first", "second", "first", "second", "first"])
        #expect(deletes.withLock { $0.count } == 2)
        #expect(deletes.withLock { $0.last?.first?.tombstone?.deletedDate } != nil)
        await kit.removeAllMergeHooks()
        await kit.removeAllObservers()
    }

    /// A crash between merging and recording progress (a hook throws there): the next round
    /// merges the same transactions again, harmlessly.
    @Test func aCrashBeforeProgressMergesAgain() async throws {
        let (app, widget) = try kitPair()
        let kit = app.kit()
        defer { kit.stop() }
        let rounds = RoundReader(kit.engine)
        struct Crash: Error {}
        kit.engine.beforeProgressHook.withLock { $0 = { throw Crash() } }
        let id = try widget.insert(1)
        #expect(await rounds.next()?.aborted == true)
        #expect(try await app.viewText(id) == "widget 1")
        // Still the progress the kit claimed as it started (the store had no history then).
        #expect(try app.progress()["app"] == 0)
        kit.engine.beforeProgressHook.withLock { $0 = nil }
        try widget.setText("again", of: "widget", 1)
        #expect(await rounds.nextMerge()?.merged == 2)
        #expect(try await app.registeredText(id) == "again")
        let view = app.view
        let count = try await view.perform { try view.count(for: FetchRequest<RemoteNote>()) }
        #expect(count == 1)
        #expect(try app.progress()["app"] == app.historyNumbers().last)
    }

    /// A started kit keeps working when its container detaches and reattaches the store.
    @Test(arguments: storedTypes)
    func keepsWorkingAcrossDetachAndReattach(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        let dir = app.directory
        let kit = app.kit()
        defer { kit.stop() }
        let rounds = RoundReader(kit.engine)
        try widget.insert(1)
        #expect(await rounds.nextMerge() != nil)
        try app.connect.detach(persistentStore: app.store)
        try widget.insert(2)
        try app.connect.attachPersistentStore(at: dir.url, for: app.configuration)
        let id = try widget.insert(3)
        #expect(await rounds.nextMerge()?.merged == 2)
        #expect(try await app.viewText(id) == "widget 3")
    }

    /// The logger gets nothing at level 0, start/stop and errors at 1, details at 2; without a
    /// logger, the messages go through CoherenceLogging.
    @Test func loggerLevels() async throws {
        let (app, widget) = try kitPair()
        var counts: [Int: [(PersistentHistoryTrackingKitLogType, String)]] = [:]
        for level in 0...2 {
            let logs = KitLogRecorder()
            let kit = PersistentHistoryTrackingKit(
                container: app.connect, currentAuthor: "app", allAuthors: ["app", "widget"], logger: logs, logLevel: level)
            let rounds = RoundReader(kit.engine)
            try widget.insert(level)
            _ = await rounds.nextMerge()
            kit.stop()
            counts[level] = logs.all
        }
        #expect(counts[0]?.isEmpty == true)
        #expect(counts[1]?.map(\.0) == [.info, .info])
        #expect(counts[1]?.first?.1.contains("started") == true)
        #expect(counts[2]?.contains { $0.0 == .debug && $0.1.contains("got a notification") } == true)
        #expect(counts[2]?.contains { $0.1.contains("merged 1 transactions") } == true)

        let author = "logged-\(UUID().uuidString.prefix(8))"
        let recorder = RecordingLogger(marker: author)
        let previous = CoherenceLogging.logger
        CoherenceLogging.logger = recorder
        defer { CoherenceLogging.logger = previous }
        let kit = PersistentHistoryTrackingKit(container: app.connect, currentAuthor: author, allAuthors: [author, "widget"])
        kit.stop()
        let message = await recorder.next()
        #expect(message.category == "history-kit")
        #expect(message.level == .info)
    }

    /// With `userDefaults`, progress is kept there under the seed's keys (a date per author)
    /// plus the transaction number, which decides what is fetched.
    @Test func userDefaultsKeepTheSeedsKeys() async throws {
        let (app, widget) = try kitPair()
        let suite = "coherence-tests-\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let kit = PersistentHistoryTrackingKit(
            container: app.connect, currentAuthor: "app", allAuthors: "app, widget", userDefaults: defaults, cleanStrategy: .none,
            uniqueString: "Test.", logLevel: 0)
        defer { kit.stop() }
        #expect(kit.allAuthors == ["app", "widget"])
        let rounds = RoundReader(kit.engine)
        try widget.insert(1)
        #expect(await rounds.nextMerge() != nil)
        let date = defaults.object(forKey: "Test.app") as? Date
        #expect(date != nil)
        let number = defaults.object(forKey: "Test.app.token.\(app.store.identifier.uuidString)") as? NSNumber
        #expect(try number?.int64Value == app.lastNumber())
        #expect(try app.progress()["app"] == nil)
    }
}
