import Foundation

/// Which transactions a history kit fetches.
enum HistoryKitSelection: Sendable {
    /// Only these authors' (none when empty): PersistentHistoryTrackingKit's rule.
    case authors(Set<String>)
    /// Everyone's but this author's, transactions without an author included: RCDataKit's rule.
    case allExcept(String)
}

/// The transactions a round fetched from one store.
struct HistoryKitBatch: Sendable {
    let store: PersistentStore
    var transactions: [PersistentHistoryTransaction]
}

/// What one round of a history kit did (for tests and benchmarks: ``HistoryKitEngine/rounds``).
struct HistoryKitRound: Sendable {
    /// Transactions merged.
    var merged = 0
    /// Transactions deleted by cleaning.
    var cleaned = 0
    /// Whether expired progress was recovered from.
    var recovered = false
    /// Whether a merge hook threw (progress left as it was).
    var aborted = false
    /// Whether the round ended because the kit was stopped.
    var stopped = false
    /// The highest transaction number merged.
    var lastMerged: Int64?
}

/// The work both history kits share (``PersistentHistoryTrackingKit`` and
/// ``PersistentHistoryTracker``): listening to the coordinator's remote changes in a task the
/// owner starts and cancels, fetching what others wrote after the current author's progress
/// (per store, by transaction number), merging it into the contexts, recording progress in the
/// progress book, and deleting what every author has processed.
///
/// A started engine has a generation; `stop()` ends it at once: a merge block that runs later
/// on a context's queue, a progress write or a clean of that generation does nothing.
final class HistoryKitEngine: Sendable {
    let coordinator: PersistentStoreCoordinator
    let contexts: [ManagedObjectContext]
    let currentAuthor: String
    let selection: HistoryKitSelection
    let book: any HistoryKitProgressBook
    let log: HistoryKitLog
    let clock: @Sendable () -> Date

    private struct State {
        var generation = 0
        var active = false
        var task: Task<Void, Never>?
    }
    private let state = LockedValue(State())
    /// Each round's outcome.
    let rounds = Broadcaster<HistoryKitRound>()
    /// Test hook: called after a round merged and before it records progress; throwing stands
    /// for a crash there (the progress is not recorded).
    let beforeProgressHook = LockedValue<(@Sendable () throws -> Void)?>(nil)
    /// Test hook: called as a kit claims its progress in a store, between its two reads of the
    /// store's history (another writer committing there).
    let claimHook = LockedValue<(@Sendable () -> Void)?>(nil)

    init(
        coordinator: PersistentStoreCoordinator, contexts: [ManagedObjectContext], currentAuthor: String, selection: HistoryKitSelection,
        book: any HistoryKitProgressBook, log: HistoryKitLog, clock: @escaping @Sendable () -> Date
    ) {
        self.coordinator = coordinator
        self.contexts = contexts
        self.currentAuthor = currentAuthor
        self.selection = selection
        self.book = book
        self.log = log
        self.clock = clock
    }

    deinit {
        state.withLock { $0.task?.cancel() }
        coordinator.attachObservers.withLock { $0[ObjectIdentifier(self)] = nil }
    }

    // MARK: Lifecycle

    /// Whether the engine is started.
    var isActive: Bool { state.withLock { $0.active } }

    /// Whether generation `g` is still the running one.
    func isActive(_ g: Int) -> Bool { state.withLock { $0.active && $0.generation == g } }

    /// The running generation (nil: stopped).
    var generation: Int? { state.withLock { $0.active ? $0.generation : nil } }

    /// Rounds run one at a time: a round asked for by the app waits for the listener's.
    private let gate = RoundGate()

    /// Runs `body` when no other round runs.
    func serialized<T: Sendable>(_ body: @Sendable () async -> T) async -> T {
        await gate.acquire()
        let result = await body()
        await gate.release()
        return result
    }

    /// Starts listening: each remote change of the coordinator, and each batch request
    /// committed through it (a coordinator does not post its own commits, and no context merges
    /// a batch request), runs `round` with the new generation, one round at a time, in a task
    /// the engine owns. Returns false (and starts nothing) when already started.
    func start(_ round: @escaping @Sendable (HistoryKitEngine, Int) async -> Void) -> Bool {
        state.withLock { s in
            guard !s.active else { return false }
            s.active = true
            s.generation += 1
            let generation = s.generation
            // Subscribed now: no change between start() and the task's first step is missed.
            let changes = coordinator.remoteChanges
            let batches = coordinator.batchCommits.stream()
            // A store attached while the engine runs is claimed as it is attached, as the
            // stores attached at start are (see claimProgress(in:)).
            coordinator.attachObservers.withLock {
                $0[ObjectIdentifier(self)] = { [weak self] store in
                    guard let self, self.isActive(generation) else { return }
                    self.claimProgress(in: [store])
                }
            }
            s.task = Task { [self] in
                await withDiscardingTaskGroup { group in
                    group.addTask { for await _ in changes { guard await self.runRound(generation, round) else { break } } }
                    group.addTask { for await _ in batches { guard await self.runRound(generation, round) else { break } } }
                }
            }
            return true
        }
    }

    /// Runs `round` of generation `g` after any round in progress; false (nothing run) once that
    /// generation stopped.
    private func runRound(_ g: Int, _ round: @Sendable (HistoryKitEngine, Int) async -> Void) async -> Bool {
        guard isActive(g), !Task.isCancelled else { return false }
        await serialized { await round(self, g) }
        return true
    }

    /// Stops at once: the task is cancelled and nothing of the running generation merges,
    /// records or cleans from now on. Returns false when already stopped.
    func stop() -> Bool {
        state.withLock { s in
            guard s.active else { return false }
            s.active = false
            s.generation += 1
            s.task?.cancel()
            s.task = nil
            coordinator.attachObservers.withLock { $0[ObjectIdentifier(self)] = nil }
            return true
        }
    }

    // MARK: Steps

    /// The attached stores that keep history.
    var trackedStores: [PersistentStore] { coordinator.persistentStores.filter { $0.engine.tracksHistory } }

    /// Records, in each store where the current author has no progress yet, the progress just
    /// before the store's oldest remaining transaction (its last one, when none remains), so
    /// that from now on the other kits' cleaning waits for this author — a started kit that has
    /// not merged anything yet is no author that "never ran" — while its first round still
    /// fetches everything that remains. Called for the attached stores when a kit starts, and
    /// for each store attached while it runs, as it is attached; failures are logged.
    func claimProgress(in stores: [PersistentStore]? = nil) {
        for store in stores?.filter({ $0.engine.tracksHistory }) ?? trackedStores {
            do {
                guard try book.marks(of: [currentAuthor], in: store)[currentAuthor] == nil else { continue }
                var request = PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)
                request.affectedStores = [store]
                request.fetchLimit = 1
                request.resultType = .transactionsOnly
                let mark: HistoryKitMark
                // The last number is read first: a transaction committed after it is then the
                // oldest one found, or comes after the mark — never taken as processed.
                let last = try coordinator.currentPersistentHistoryToken(fromStores: [store])?.transactionNumber ?? 0
                claimHook.withLock { $0 }?()
                if let oldest = try coordinator.execute(request).transactions.first {
                    mark = HistoryKitMark(transactionNumber: oldest.transactionNumber - 1, timestamp: oldest.timestamp)
                } else {
                    mark = HistoryKitMark(transactionNumber: last, timestamp: clock())
                }
                try book.record(mark, author: currentAuthor, in: store)
                log(
                    .debug, 2,
                    "progress of '\(currentAuthor)' in \(store.url?.lastPathComponent ?? "the store") claimed at \(Self.describe(mark))")
            } catch {
                log(
                    .error, 1, "recording the starting progress of '\(currentAuthor)' in \(store.url?.path ?? "the store") failed: \(error)"
                )
            }
        }
    }

    /// What others wrote after the current author's progress, per store. Progress whose
    /// following history was deleted is recovered from: the contexts' objects are refreshed and
    /// the store's oldest remaining transactions are fetched; when none of them is another
    /// author's, the progress moves to the store's last transaction (unless generation `g`
    /// stopped), so that the next rounds do not recover again.
    func fetch(into round: inout HistoryKitRound, generation g: Int? = nil) -> [HistoryKitBatch] {
        var batches: [HistoryKitBatch] = []
        for store in trackedStores {
            do {
                let mark = try book.marks(of: [currentAuthor], in: store)[currentAuthor]
                log(
                    .debug, 2,
                    "last progress of '\(currentAuthor)' in \(store.url?.lastPathComponent ?? "the store"): \(Self.describe(mark))")
                let transactions: [PersistentHistoryTransaction]
                do {
                    transactions = try fetch(after: mark, in: store)
                } catch let error as CoherenceError where error.code == .historyTokenExpired {
                    log(
                        .notice, 1,
                        "the history after '\(currentAuthor)''s progress (\(Self.describe(mark))) was deleted; refreshing the contexts and merging from the oldest remaining transaction"
                    )
                    round.recovered = true
                    refreshContexts()
                    // Read first: a transaction committed after it is fetched, or comes after it.
                    let last = try coordinator.currentPersistentHistoryToken(fromStores: [store])?.transactionNumber
                    transactions = try fetch(after: nil, in: store)
                    if transactions.isEmpty, let last, g.map(isActive) ?? true {
                        try book.record(HistoryKitMark(transactionNumber: last, timestamp: clock()), author: currentAuthor, in: store)
                    }
                }
                if !transactions.isEmpty { batches.append(HistoryKitBatch(store: store, transactions: transactions)) }
            } catch {
                log(.error, 1, "fetching the history of \(store.url?.path ?? "the store") failed: \(error)")
            }
        }
        return batches
    }

    private func fetch(after mark: HistoryKitMark?, in store: PersistentStore) throws -> [PersistentHistoryTransaction] {
        var request: PersistentHistoryChangeRequest
        if let number = mark?.transactionNumber {
            request = .fetchHistory(after: PersistentHistoryToken(storeIdentifier: store.identifier, transactionNumber: number))
        } else if let date = mark?.timestamp {
            request = .fetchHistory(after: date)
        } else {
            request = .fetchHistory(after: nil as PersistentHistoryToken?)
        }
        request.affectedStores = [store]
        switch selection {
        case .authors(let authors): request.authors = authors
        case .allExcept(let author): request.excludedAuthors = [author]
        }
        return try coordinator.execute(request).transactions
    }

    static func describe(_ mark: HistoryKitMark?) -> String {
        guard let mark else { return "none" }
        let time = describe(mark.timestamp)
        return mark.transactionNumber.map { "transaction \($0) of \(time)" } ?? time
    }

    /// A transaction's timestamp for a message. (Foundation's description of a NaN date, which
    /// a PostgreSQL store's history can hold, stops the process.)
    static func describe(_ timestamp: Date) -> String {
        let t = timestamp.timeIntervalSinceReferenceDate
        return t.isNaN ? "Date(timeIntervalSinceReferenceDate: \(t))" : "\(timestamp)"
    }

    /// Refreshes every object of the contexts (after history they needed was deleted).
    func refreshContexts() {
        for context in contexts { context.performAndWait { context.refreshAllObjects() } }
    }

    /// The kit's own merge: every change of `transactions` merged into each context at once, on
    /// its queue (unless generation `g` stopped meanwhile). Returns false when it stopped.
    @discardableResult
    func merge(_ transactions: [PersistentHistoryTransaction], generation g: Int) -> Bool {
        var event = ContextEvent(kind: .didSave, contextName: nil)
        for t in transactions {
            for change in t.changes ?? [] {
                switch change.changeType {
                case .insert: event.inserted.insert(change.changedObjectID)
                case .update: event.updated.insert(change.changedObjectID)
                case .delete: event.deleted.insert(change.changedObjectID)
                }
            }
        }
        event.inserted.subtract(event.deleted)
        event.updated.subtract(event.deleted)
        // Written by another coordinator or process: rows cached before are stale.
        let stale = Array(event.updated.union(event.deleted))
        var coordinators: [ObjectIdentifier: PersistentStoreCoordinator] = [:]
        for c in contexts { coordinators[ObjectIdentifier(c.persistentStoreCoordinator)] = c.persistentStoreCoordinator }
        for c in coordinators.values { c.rowCache.remove(stale) }
        let merged = event
        var completed = true
        for context in contexts {
            let done = context.performAndWait { () -> Bool in
                guard isActive(g) else { return false }
                context.merge(merged)
                return true
            }
            completed = completed && done
        }
        return completed
    }

    /// Records the current author's progress: the last transaction of each batch.
    func recordProgress(_ batches: [HistoryKitBatch], generation g: Int) throws {
        try beforeProgressHook.withLock { $0 }?()
        for batch in batches {
            guard isActive(g), let last = batch.transactions.last else { return }
            try book.record(
                HistoryKitMark(transactionNumber: last.transactionNumber, timestamp: last.timestamp), author: currentAuthor, in: batch.store
            )
            log(
                .debug, 2,
                "merged \(batch.transactions.count) transactions, progress of '\(currentAuthor)' updated to transaction \(last.transactionNumber) of \(Self.describe(last.timestamp))"
            )
        }
    }

    /// Deletes, in every store that keeps history, the transactions that all of `authors` with a
    /// recorded progress have processed (nil: every author with a record; authors without one
    /// are not waited for, as in PersistentHistoryTrackingKit 1), and those written before
    /// `olderThan`. Returns how many were deleted.
    func clean(authors: [String]?, olderThan: Date?, generation g: Int? = nil) -> Int {
        var deleted = 0
        for store in trackedStores {
            if let g, !isActive(g) { break }
            do {
                let marks = try marks(of: authors, in: store)
                var requests: [PersistentHistoryChangeRequest] = []
                if !marks.isEmpty {
                    let numbers = marks.values.compactMap(\.transactionNumber)
                    if numbers.count == marks.count, let lowest = numbers.min() {
                        requests.append(
                            .deleteHistory(before: PersistentHistoryToken(storeIdentifier: store.identifier, transactionNumber: lowest)))
                    } else if let earliest = marks.values.map(\.timestamp).min() {
                        requests.append(.deleteHistory(before: earliest))
                    }
                }
                if let olderThan { requests.append(.deleteHistory(before: olderThan)) }
                for var request in requests {
                    request.affectedStores = [store]
                    deleted += try coordinator.execute(request).count
                }
            } catch {
                log(.error, 1, "cleaning the history of \(store.url?.path ?? "the store") failed: \(error)")
            }
        }
        log(.debug, 2, "delete success: \(deleted) transactions")
        return deleted
    }

    private func marks(of authors: [String]?, in store: PersistentStore) throws -> [String: HistoryKitMark] {
        if let authors { return try book.marks(of: authors, in: store) }
        if let all = try coordinator.historyProgress(in: store) {
            return all.mapValues { HistoryKitMark(transactionNumber: $0.transactionNumber, timestamp: $0.timestamp) }
        }
        return [:]
    }
}

/// Lets one round run at a time (waiters are resumed in order).
actor RoundGate {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
