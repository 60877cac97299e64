import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// RCDataKit's tracker on Coherence: two stacks on one file.
@Suite("History tracker", .timeLimit(.minutes(10)))
struct HistoryTrackerTests {
    /// The tracker merges every other author's transactions, those without an author included,
    /// never its own; a second startMonitoring() makes no second listener.
    @Test(arguments: storedTypes)
    func mergesOthersAndAuthorlessTransactions(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        let before = app.coordinator.remoteChangeBroadcaster.subscriberCount
        let tracker = PersistentHistoryTracker(container: app.connect, currentAuthor: "app")
        await tracker.startMonitoring()
        await tracker.startMonitoring()
        #expect(await tracker.isMonitoring)
        #expect(app.coordinator.remoteChangeBroadcaster.subscriberCount == before + 1)
        let rounds = RoundReader(tracker.engine)
        let anonymous = try widget.insert(1, as: .some(nil))
        let named = try widget.insert(2)
        let last = try widget.lastNumber()
        #expect(await rounds.through(last) != nil)
        #expect(try await app.viewText(anonymous) == "widget 1")
        #expect(try await app.viewText(named) == "widget 2")
        try app.setText("mine", of: "widget", 2)
        try widget.setText("both", of: "widget", 1)
        let again = try widget.lastNumber()
        #expect(await rounds.through(again) != nil)
        #expect(try await app.registeredText(anonymous) == "both")
        #expect(try app.progress()["app"] == again)
        await tracker.stopMonitoring()
        #expect(await !tracker.isMonitoring)
    }

    /// The tracker cleans on every round: what every author with progress merged, and always
    /// everything older than `maxTransactionAge` (on its clock), even history an author has
    /// not merged.
    @Test(arguments: storedTypes)
    func alwaysCleansPastTheMaximumAge(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        try widget.coordinator.recordHistoryProgress(
            HistoryProgress(transactionNumber: 0, timestamp: .distantPast, updated: Date()), author: "laggard", in: widget.store)
        let clock = TestClock()
        let tracker = PersistentHistoryTracker(container: app.connect, currentAuthor: "app", maxTransactionAge: 100, clock: clock.function)
        await tracker.startMonitoring()
        let rounds = RoundReader(tracker.engine)
        try widget.insert(1)
        #expect(await rounds.nextMerge()?.cleaned == 0)
        #expect(await tracker.maxTransactionAge == 100)
        clock.advance(by: 10_000)  // far past the timestamps written meanwhile
        try widget.insert(2)
        #expect(await rounds.nextMerge()?.cleaned == 2)
        #expect(try app.historyNumbers().isEmpty)
        await tracker.stopMonitoring()
    }

    /// Injected fetcher, merger, cleaner and timestamp manager replace the tracker's steps.
    @Test func injectedSteps() async throws {
        let (app, widget) = try kitPair()
        struct Fetcher: PersistentHistoryFetcher {
            let dates: LockedValue<[Date]>
            func fetchTransactions(workerContext: ManagedObjectContext, minimumDate: Date) throws -> [PersistentHistoryTransaction] {
                dates.withLock { $0.append(minimumDate) }
                #expect(workerContext.name == "PersistentHistoryTrackingContext")
                var request = PersistentHistoryChangeRequest.fetchHistory(after: minimumDate)
                request.excludedAuthors = ["app"]
                return try workerContext.performAndWait { try workerContext.execute(request).transactions }
            }
        }
        struct Merger: PersistentHistoryMerger {
            let merged: LockedValue<Int>
            func mergeTransactions(viewContext: ManagedObjectContext, transactions: [PersistentHistoryTransaction]) throws {
                merged.withLock { $0 += transactions.count }
            }
        }
        struct Cleaner: PersistentHistoryCleaner {
            let dates: LockedValue<[Date]>
            func cleanTransactions(workerContext: ManagedObjectContext, cleanBeforeDate: Date, authors: [TransactionAuthor]?) throws {
                dates.withLock { $0.append(cleanBeforeDate) }
            }
        }
        final class Dates: PersistentHistoryTimestampManager, @unchecked Sendable {
            let table = LockedValue<[TransactionAuthor: Date]>([:])
            var storedTransactionDateAuthors: [TransactionAuthor] { table.withLock { Array($0.keys) } }
            func latestHistoryTransactionDate(authors: [TransactionAuthor]?) -> Date? {
                table.withLock { t in t.filter { authors?.contains($0.key) ?? true }.values.min() }
            }
            func updateLatestHistoryTransactionDate(_ updates: [TransactionAuthor: Date?]) {
                table.withLock { t in for (a, d) in updates { t[a] = d } }
            }
        }
        let fetched = LockedValue<[Date]>([]), merged = LockedValue(0), cleaned = LockedValue<[Date]>([])
        let dates = Dates()
        let clock = TestClock()
        let tracker = PersistentHistoryTracker(
            container: app.connect, currentAuthor: "app", timestampManager: dates, maxTransactionAge: 1000,
            customFetcher: Fetcher(dates: fetched), customMerger: Merger(merged: merged), customCleaner: Cleaner(dates: cleaned),
            clock: clock.function)
        await tracker.startMonitoring()
        let rounds = RoundReader(tracker.engine)
        try widget.insert(1)
        #expect(await rounds.nextMerge()?.merged == 1)
        #expect(merged.withLock { $0 } == 1)
        #expect(fetched.withLock { $0 } == [.distantPast])
        let recorded = try #require(dates.latestHistoryTransactionDate(author: "app"))
        #expect(cleaned.withLock { $0.last } == max(recorded, clock.now.withLock { $0 }.addingTimeInterval(-1000)))
        try widget.insert(2)
        #expect(await rounds.nextMerge()?.merged == 1)
        #expect(fetched.withLock { $0.last } == recorded)
        dates.updateLatestHistoryTransactionDate(author: "app", date: nil)
        #expect(dates.storedTransactionDateAuthors.isEmpty)
        await tracker.stopMonitoring()
    }

    /// A TransactionAuthor names a context's author and name.
    @Test func transactionAuthorNamesContexts() throws {
        let dir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app")
        let importer: TransactionAuthor = "importer"
        let context = app.connect.backgroundContext(author: importer)
        #expect(context.transactionAuthor == "importer")
        #expect(context.name == "importer")
        #expect(context.author() == importer)
        #expect(TransactionAuthor.viewContext.name == "viewContext")
        #expect(TransactionAuthor("x").id == "x")
        let saved = try context.performAndWait { () throws -> Int64 in
            let note = RemoteNote(context: context)
            note.author = "importer"
            try context.save()
            return try app.lastNumber()
        }
        let transaction = try app.coordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?)).transactions.last
        #expect(transaction?.transactionNumber == saved)
        #expect(transaction?.author == "importer")
        #expect(transaction?.contextName == "importer")
    }
}
