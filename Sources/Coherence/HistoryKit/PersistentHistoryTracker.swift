import Foundation

/// Merges what other authors write to a container's stores into its view context and trims old
/// history: RCDataKit's `PersistentHistoryTracker`, on the same engine as
/// ``PersistentHistoryTrackingKit``.
///
/// On each remote change of the container's coordinator the tracker fetches, per store, the
/// transactions after its author's progress that its author did not write (transactions
/// without an author included), merges them into the view context, records its progress, and
/// then — every time — deletes the history every author with recorded progress has merged, and
/// everything older than ``maxTransactionAge`` whatever the authors merged.
///
/// ```swift
/// connect.viewContext.setAuthor("app")
/// let tracker = PersistentHistoryTracker(container: connect, currentAuthor: "app")
/// await tracker.startMonitoring()
/// // … later
/// await tracker.stopMonitoring()
/// ```
///
/// Progress is kept as transaction numbers in the store itself (every process reads every
/// author's); a `timestampManager`, when given, also gets each merge's date.
public actor PersistentHistoryTracker {
    /// History older than this is deleted on every clean, whatever the authors merged (seconds).
    public var maxTransactionAge: TimeInterval
    /// The author whose transactions the tracker never merges and whose progress it records.
    public nonisolated let currentAuthor: TransactionAuthor

    nonisolated let engine: HistoryKitEngine
    private let timestampManager: (any PersistentHistoryTimestampManager)?
    private let customFetcher: (any PersistentHistoryFetcher)?
    private let customMerger: (any PersistentHistoryMerger)?
    private let customCleaner: (any PersistentHistoryCleaner)?
    private let viewContext: ManagedObjectContext

    /// Creates a tracker for `container`'s view context; it starts with ``startMonitoring()``.
    ///
    /// - Parameters:
    ///   - container: the container (any ``PersistentStack``).
    ///   - currentAuthor: the view context's author (default `"viewContext"`).
    ///   - timestampManager: also gets the date of each merge's last transaction.
    ///   - maxTransactionAge: history older than this is always deleted (default seven days).
    ///   - customFetcher: replaces the tracker's fetch.
    ///   - customMerger: replaces the tracker's merge.
    ///   - customCleaner: replaces the tracker's clean.
    ///   - logger: receives the messages (nil: ``CoherenceLogging``).
    ///   - clock: the current date (tests pass their own).
    public init(
        container: any PersistentStack,
        currentAuthor: TransactionAuthor = .viewContext,
        timestampManager: (any PersistentHistoryTimestampManager)? = nil,
        maxTransactionAge: TimeInterval = 60 * 60 * 24 * 7,
        customFetcher: (any PersistentHistoryFetcher)? = nil,
        customMerger: (any PersistentHistoryMerger)? = nil,
        customCleaner: (any PersistentHistoryCleaner)? = nil,
        logger: (any DataStackLogger)? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.currentAuthor = currentAuthor
        self.timestampManager = timestampManager
        self.maxTransactionAge = maxTransactionAge
        self.customFetcher = customFetcher
        self.customMerger = customMerger
        self.customCleaner = customCleaner
        self.viewContext = container.viewContext
        let coordinator = container.persistentStoreCoordinator
        engine = HistoryKitEngine(
            coordinator: coordinator, contexts: [container.viewContext], currentAuthor: currentAuthor.name,
            selection: .allExcept(currentAuthor.name), book: StoreProgressBook(coordinator: coordinator, clock: clock),
            log: HistoryKitLog(logger: logger.map(DataStackLoggerAdapter.init), level: 2), clock: clock)
    }

    deinit { _ = engine.stop() }

    /// Whether the tracker is monitoring.
    public var isMonitoring: Bool { engine.isActive }

    /// Starts listening to the coordinator's remote changes; a second call while monitoring does
    /// nothing (RCDataKit would start a second loop).
    public func startMonitoring() {
        let started = engine.start { [weak self] _, generation in await self?.processRound(generation: generation) }
        guard started else { return }
        engine.log(.info, 1, "history tracker started (author '\(currentAuthor.name)')")
        engine.claimProgress()
    }

    /// Stops at once: nothing more is merged, recorded or cleaned.
    public func stopMonitoring() {
        if engine.stop() { engine.log(.info, 1, "history tracker stopped (author '\(currentAuthor.name)')") }
    }

    /// Changes ``maxTransactionAge``.
    public func setMaxTransactionAge(_ age: TimeInterval) { maxTransactionAge = age }

    /// A private context of the tracker's coordinator, as RCDataKit's worker context.
    private func workerContext() -> ManagedObjectContext {
        let context = ManagedObjectContext(
            concurrencyType: .privateQueue, coordinator: engine.coordinator, name: "PersistentHistoryTrackingContext")
        context.transactionAuthor = "PersistentHistoryTracker"
        return context
    }

    /// One round: fetch, merge, progress, clean (every time).
    func processRound(generation g: Int) {
        var round = HistoryKitRound()
        defer { engine.rounds.yield(round) }
        let worker = workerContext()
        var batches: [HistoryKitBatch]
        if let customFetcher {
            let minimumDate = timestampManager?.latestHistoryTransactionDate(authors: nil) ?? .distantPast
            do {
                let fetched = try customFetcher.fetchTransactions(workerContext: worker, minimumDate: minimumDate)
                let stores = engine.trackedStores
                batches = stores.compactMap { store in
                    let mine = fetched.filter { $0.storeID == store.identifier }
                    return mine.isEmpty ? nil : HistoryKitBatch(store: store, transactions: mine)
                }
            } catch {
                engine.log(.error, 1, "fetching history failed: \(error)")
                batches = []
            }
        } else {
            batches = engine.fetch(into: &round, generation: g)
        }
        let transactions = batches.flatMap(\.transactions)
        guard engine.isActive(g) else { return }
        if !transactions.isEmpty {
            if let customMerger {
                do { try customMerger.mergeTransactions(viewContext: viewContext, transactions: transactions) } catch {
                    engine.log(.error, 1, "merging history failed: \(error)")
                }
            } else if !engine.merge(transactions, generation: g) {
                return
            }
            do {
                try engine.recordProgress(batches, generation: g)
                if let last = transactions.max(by: { $0.timestamp < $1.timestamp }) {
                    timestampManager?.updateLatestHistoryTransactionDate([currentAuthor: last.timestamp])
                }
            } catch {
                engine.log(.error, 1, "recording progress failed: \(error)")
            }
            round.merged = transactions.count
            round.lastMerged = transactions.map(\.transactionNumber).max()
        }
        guard engine.isActive(g) else { return }
        let oldest = engine.clock().addingTimeInterval(-maxTransactionAge)
        if let customCleaner {
            var date = oldest
            if let recorded = timestampManager?.latestHistoryTransactionDate(authors: nil), recorded > date { date = recorded }
            let authors = timestampManager?.storedTransactionDateAuthors
            do { try customCleaner.cleanTransactions(workerContext: worker, cleanBeforeDate: date, authors: authors) } catch {
                engine.log(.error, 1, "cleaning history failed: \(error)")
            }
        } else {
            round.cleaned = engine.clean(authors: nil, olderThan: oldest, generation: g)
        }
    }
}
