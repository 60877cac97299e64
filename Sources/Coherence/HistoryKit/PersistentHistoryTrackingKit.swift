import Foundation

/// Merges what other authors write to a store into this process's contexts, and trims the
/// history once every author has merged it: PersistentHistoryTrackingKit's API on Coherence.
///
/// An app, its extension, a widget and a batch importer write one SQLite store, each process
/// under its own transaction author. Each runs a kit: on every remote change of its
/// coordinator, the kit fetches the transactions the other authors wrote after its own
/// progress, merges them into its contexts (the view context by default), records its progress
/// and, as ``TransactionCleanStrategy`` allows, deletes the history every author has merged.
/// The stores need ``StoreOptions/persistentHistoryTracking`` and
/// ``StoreOptions/remoteChangeNotificationPost``.
///
/// ```swift
/// let options = StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true)
/// try connect.attachPersistentStore(for: StoreConfiguration(name: "Shared", options: options))
/// connect.viewContext.transactionAuthor = "app"
/// let kit = PersistentHistoryTrackingKit(container: connect, currentAuthor: "app",
///                                        allAuthors: ["app", "widget", "importer"], batchAuthors: ["importer"])
/// // … later
/// kit.stop()
/// ```
///
/// Progress is the number of the last merged transaction of each store (its
/// ``PersistentHistoryToken``), so no transaction is skipped or merged twice because two shared a
/// timestamp. Without `userDefaults` it is kept in the store itself, where every process reads
/// every author's; with `userDefaults`, in those defaults under PersistentHistoryTrackingKit's keys
/// (`uniqueString + author`, a `Date`) plus the number. See the history-tracking guide.
///
/// The kit's work runs in a task it owns; ``stop()`` (or releasing the kit) ends it at once.
public final class PersistentHistoryTrackingKit: Sendable {
    /// 0: no messages; 1: the important ones (start, stop, errors, recoveries); 2: all.
    public let logLevel: Int
    /// The author whose saves this kit never merges, and whose progress it records.
    public let currentAuthor: String
    /// Every author that writes the store (the current one included).
    public let allAuthors: [String]
    /// Authors that only write (batch importers): their transactions are merged and cleaned,
    /// but they never hold cleaning back.
    public let batchAuthors: [String]
    /// When the kit cleans.
    public let cleanStrategy: TransactionCleanStrategy
    /// Transactions older than this are deleted whenever the kit cleans, whatever the authors
    /// merged (seconds).
    public let maximumDuration: TimeInterval
    /// The prefix of the `UserDefaults` keys (with `userDefaults` only).
    public let uniqueString: String

    let engine: HistoryKitEngine
    let hooks = HistoryKitHooks()
    private let merger: (any TransactionMergerProtocol)?
    private let deduplicator: (any TransactionDeduplicatorProtocol)?
    /// The clean strategy's memory: the notifications since the last clean, the last clean's date.
    private let cleanState = LockedValue<(sinceLast: Int?, lastClean: Date?)>((nil, nil))

    /// The author PersistentHistoryTrackingKit adds when `includingCloudKitMirroring` is true.
    public static let cloudKitMirroringAuthor = "NSCloudKitMirroringDelegate.import"

    /// Creates a kit on a container (any ``PersistentStack``: ``GenericConnect``,
    /// ``GenericPersistentContainer``) and, with `autoStart`, starts it.
    ///
    /// - Parameters:
    ///   - container: the container whose coordinator's stores are tracked.
    ///   - contexts: the contexts to merge into (nil: the container's view context).
    ///   - currentAuthor: this process's author (set it as your contexts' `transactionAuthor`).
    ///   - allAuthors: every author writing the store, this one included.
    ///   - includingCloudKitMirroring: also merge `"NSCloudKitMirroringDelegate.import"`'s
    ///     transactions (kept for source compatibility; no process writes them on Linux).
    ///   - batchAuthors: authors that only write; they never hold cleaning back.
    ///   - userDefaults: where to keep progress in PersistentHistoryTrackingKit's keys; nil
    ///     (the default) keeps it in the store, where every process reads it.
    ///   - cleanStrategy: when to clean (default: after every merge).
    ///   - merger: replaces the kit's own merge.
    ///   - deduplicator: runs after each merge.
    ///   - maximumDuration: transactions older than this are deleted when the kit cleans
    ///     (default seven days).
    ///   - uniqueString: the prefix of the `UserDefaults` keys.
    ///   - logger: receives the kit's messages (nil: ``CoherenceLogging``).
    ///   - logLevel: 0 none, 1 important, 2 all.
    ///   - autoStart: start at once.
    ///   - clock: the current date, for the clean strategies and `maximumDuration` (tests pass
    ///     their own).
    public convenience init(
        container: any PersistentStack,
        contexts: [ManagedObjectContext]? = nil,
        currentAuthor: String,
        allAuthors: [String],
        includingCloudKitMirroring: Bool = false,
        batchAuthors: [String] = [],
        userDefaults: UserDefaults? = nil,
        cleanStrategy: TransactionCleanStrategy = .byNotification(times: 1),
        merger: (any TransactionMergerProtocol)? = nil,
        deduplicator: (any TransactionDeduplicatorProtocol)? = nil,
        maximumDuration: TimeInterval = 60 * 60 * 24 * 7,
        uniqueString: String = "PersistentHistoryTrackingKit.lastToken.",
        logger: (any PersistentHistoryTrackingKitLoggerProtocol)? = nil,
        logLevel: Int = 1,
        autoStart: Bool = true,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(
            viewContext: container.viewContext, contexts: contexts, currentAuthor: currentAuthor, allAuthors: allAuthors,
            includingCloudKitMirroring: includingCloudKitMirroring, batchAuthors: batchAuthors, userDefaults: userDefaults,
            cleanStrategy: cleanStrategy, merger: merger, deduplicator: deduplicator, maximumDuration: maximumDuration,
            uniqueString: uniqueString, logger: logger, logLevel: logLevel, autoStart: autoStart, clock: clock)
    }

    /// Creates a kit on a view context's coordinator and, with `autoStart`, starts it. The
    /// parameters are those of ``init(container:contexts:currentAuthor:allAuthors:includingCloudKitMirroring:batchAuthors:userDefaults:cleanStrategy:merger:deduplicator:maximumDuration:uniqueString:logger:logLevel:autoStart:clock:)``;
    /// `contexts` defaults to `[viewContext]`. Any context will do (PersistentHistoryTrackingKit
    /// requires a main-queue one).
    public init(
        viewContext: ManagedObjectContext,
        contexts: [ManagedObjectContext]? = nil,
        currentAuthor: String,
        allAuthors: [String],
        includingCloudKitMirroring: Bool = false,
        batchAuthors: [String] = [],
        userDefaults: UserDefaults? = nil,
        cleanStrategy: TransactionCleanStrategy = .byNotification(times: 1),
        merger: (any TransactionMergerProtocol)? = nil,
        deduplicator: (any TransactionDeduplicatorProtocol)? = nil,
        maximumDuration: TimeInterval = 60 * 60 * 24 * 7,
        uniqueString: String = "PersistentHistoryTrackingKit.lastToken.",
        logger: (any PersistentHistoryTrackingKitLoggerProtocol)? = nil,
        logLevel: Int = 1,
        autoStart: Bool = true,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.logLevel = logLevel
        self.currentAuthor = currentAuthor
        self.allAuthors = allAuthors
        self.batchAuthors = batchAuthors
        self.cleanStrategy = cleanStrategy
        self.maximumDuration = abs(maximumDuration)
        self.uniqueString = uniqueString
        self.merger = merger
        self.deduplicator = deduplicator
        let coordinator = viewContext.persistentStoreCoordinator
        let log = HistoryKitLog(logger: logger, level: logLevel)
        var fetched = Set(allAuthors)
        if includingCloudKitMirroring { fetched.insert(Self.cloudKitMirroringAuthor) }
        fetched.remove(currentAuthor)
        let book: any HistoryKitProgressBook =
            userDefaults.map { UserDefaultsProgressBook(defaults: $0, uniqueString: uniqueString) }
            ?? StoreProgressBook(coordinator: coordinator, clock: clock)
        engine = HistoryKitEngine(
            coordinator: coordinator, contexts: contexts ?? [viewContext], currentAuthor: currentAuthor, selection: .authors(fetched),
            book: book, log: log, clock: clock)
        if autoStart { start() }
    }

    /// The comma-separated form of `allAuthors` (`"app,widget,importer"`; spaces around names
    /// are ignored); otherwise as ``init(container:contexts:currentAuthor:allAuthors:includingCloudKitMirroring:batchAuthors:userDefaults:cleanStrategy:merger:deduplicator:maximumDuration:uniqueString:logger:logLevel:autoStart:clock:)``.
    public convenience init(
        container: any PersistentStack, contexts: [ManagedObjectContext]? = nil, currentAuthor: String, allAuthors: String,
        includingCloudKitMirroring: Bool = false, batchAuthors: [String] = [], userDefaults: UserDefaults? = nil,
        cleanStrategy: TransactionCleanStrategy = .byNotification(times: 1), merger: (any TransactionMergerProtocol)? = nil,
        deduplicator: (any TransactionDeduplicatorProtocol)? = nil, maximumDuration: TimeInterval = 60 * 60 * 24 * 7,
        uniqueString: String = "PersistentHistoryTrackingKit.lastToken.", logger: (any PersistentHistoryTrackingKitLoggerProtocol)? = nil,
        logLevel: Int = 1, autoStart: Bool = true
    ) {
        self.init(
            viewContext: container.viewContext, contexts: contexts, currentAuthor: currentAuthor, allAuthors: Self.split(allAuthors),
            includingCloudKitMirroring: includingCloudKitMirroring, batchAuthors: batchAuthors, userDefaults: userDefaults,
            cleanStrategy: cleanStrategy, merger: merger, deduplicator: deduplicator, maximumDuration: maximumDuration,
            uniqueString: uniqueString, logger: logger, logLevel: logLevel, autoStart: autoStart)
    }

    /// The authors of a comma-separated list.
    static func split(_ authors: String) -> [String] {
        authors.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    deinit { _ = engine.stop() }

    // MARK: Lifecycle

    /// Whether the kit is listening.
    public var isRunning: Bool { engine.isActive }

    /// Starts listening to the coordinator's remote changes. A second call while started does
    /// nothing (there is never a second listener).
    public func start() {
        let started = engine.start { [weak self] _, generation in await self?.processRound(generation: generation) }
        guard started else { return }
        engine.log(.info, 1, "started (author '\(currentAuthor)')")
        engine.claimProgress()
        let stores = engine.coordinator.persistentStores
        if !stores.contains(where: { $0.options.persistentHistoryTracking && $0.options.remoteChangeNotificationPost }) {
            engine.log(
                .error, 1,
                "no attached store has both persistentHistoryTracking and remoteChangeNotificationPost: nothing will be merged until one is attached"
            )
        }
    }

    /// Stops at once: nothing more is merged, recorded or cleaned, even by a round in progress.
    /// A second call does nothing; ``start()`` starts again.
    public func stop() {
        guard engine.stop() else { return }
        engine.log(.info, 1, "stopped (author '\(currentAuthor)')")
    }

    /// A cleaner that deletes, when called, the history every author in ``allAuthors`` has
    /// merged (batch authors included; authors without progress are not waited for), using
    /// the kit's progress, logger and log level. Use it with ``TransactionCleanStrategy/none``.
    ///
    /// ```swift
    /// let cleaner = kit.cleanerBuilder()
    /// cleaner()          // for example when the app goes to the background
    /// ```
    public func cleanerBuilder() -> PersistentHistoryTrackingKitManualCleaner {
        PersistentHistoryTrackingKitManualCleaner(engine: engine, authors: allAuthors, maximumDuration: maximumDuration)
    }

    /// Runs one round now, without waiting for a remote change — fetches what the other authors
    /// wrote since this author's progress, merges it, records the progress and cleans as the
    /// strategy allows — after any round in progress. Useful at launch, to catch up with what
    /// was written while the app was not running. Does nothing while the kit is stopped.
    ///
    /// ```swift
    /// let merged = await kit.mergePendingHistory()
    /// ```
    ///
    /// - Returns: the number of transactions merged.
    @discardableResult
    public func mergePendingHistory() async -> Int {
        guard let g = engine.generation else { return 0 }
        return await engine.serialized { await self.processRound(generation: g).merged }
    }

    // MARK: Hooks

    /// Registers an observer of one entity's inserts, updates or deletes: for each merged
    /// transaction that has some, it gets them (deletes with their ``Tombstone``) before the
    /// merge. Observers cannot change data. Returns the ID to remove it with.
    ///
    /// ```swift
    /// await kit.registerObserver(entityName: "Note", operation: .insert) { changes in print(changes.count, "notes arrived") }
    /// ```
    @discardableResult
    public func registerObserver(entityName: String, operation: HookOperation, callback: @escaping HookCallback) async -> UUID {
        hooks.addObserver(entityName: entityName, operation: operation, callback)
    }

    /// Removes an observer; false when the ID is unknown or already removed.
    @discardableResult
    public func removeObserver(id: UUID) async -> Bool { hooks.removeObserver(id: id) }

    /// Removes every observer of one entity and operation.
    public func removeObserver(entityName: String, operation: HookOperation) async {
        hooks.removeObservers(entityName: entityName, operation: operation)
    }

    /// Removes every observer.
    public func removeAllObservers() async { hooks.removeAllObservers() }

    /// Registers a merge hook: it runs before the kit's own merge with every fetched
    /// transaction and the kit's contexts, in registration order (or before the hook `before`
    /// names), and returns ``MergeHookResult/goOn`` or ``MergeHookResult/finish`` (skip the
    /// remaining hooks and the kit's merge). A hook that throws ends the round without
    /// recording progress: the same transactions come again with the next change.
    ///
    /// ```swift
    /// await kit.registerMergeHook { input in
    ///     for context in input.contexts { /* merge input.transactions your way */ }
    ///     return .finish
    /// }
    /// ```
    @discardableResult
    public func registerMergeHook(before: UUID? = nil, callback: @escaping MergeHookCallback) async -> UUID {
        hooks.addMergeHook(before: before, callback)
    }

    /// Removes a merge hook; false when the ID is unknown or already removed.
    @discardableResult
    public func removeMergeHook(id: UUID) async -> Bool { hooks.removeMergeHook(id: id) }

    /// Removes every merge hook.
    public func removeAllMergeHooks() async { hooks.removeAllMergeHooks() }

    // MARK: The round

    /// One round, for a remote change: fetch, observers, merge hooks, merge, deduplicate,
    /// progress, clean.
    @discardableResult
    func processRound(generation g: Int) async -> HistoryKitRound {
        var round = HistoryKitRound()
        defer { engine.rounds.yield(round) }
        engine.log(.debug, 2, "got a notification")
        let batches = engine.fetch(into: &round, generation: g)
        let transactions = batches.flatMap(\.transactions)
        guard !transactions.isEmpty else { return round }
        guard engine.isActive(g) else {
            round.stopped = true
            return round
        }
        engine.log(
            .debug, 2, "\(transactions.count) transactions with \(transactions.reduce(0) { $0 + ($1.changes?.count ?? 0) }) changes")
        await hooks.notifyObservers(of: transactions)
        do {
            let input = MergeHookInput(transactions: transactions, contexts: engine.contexts)
            let finished = try await hooks.runMergeHooks(input)
            guard engine.isActive(g) else {
                round.stopped = true
                return round
            }
            if !finished {
                if let merger {
                    merger(merge: transactions, into: engine.contexts)
                } else if !engine.merge(transactions, generation: g) {
                    round.stopped = true
                    return round
                }
            }
            deduplicator?(deduplicate: transactions, in: engine.contexts)
            try engine.recordProgress(batches, generation: g)
        } catch {
            round.aborted = true
            engine.log(.error, 1, "the round was not completed, progress stays where it was: \(error)")
            return round
        }
        round.merged = transactions.count
        round.lastMerged = transactions.map(\.transactionNumber).max()
        guard engine.isActive(g) else {
            round.stopped = true
            return round
        }
        guard shouldClean() else { return round }
        let required = allAuthors.filter { !batchAuthors.contains($0) }
        round.cleaned = engine.clean(authors: required, olderThan: engine.clock().addingTimeInterval(-maximumDuration), generation: g)
        return round
    }

    /// Whether the clean strategy allows cleaning now (after a merge); notes the clean.
    func shouldClean() -> Bool {
        let now = engine.clock()
        return cleanState.withLock { s in
            switch cleanStrategy {
            case .none:
                return false
            case .byDuration(let seconds):
                if let last = s.lastClean, !(last.addingTimeInterval(seconds) < now) { return false }
                s.lastClean = now
                return true
            case .byNotification(let times):
                guard times > 1 else { return true }
                if let since = s.sinceLast, since + 1 < times {
                    s.sinceLast = since + 1
                    return false
                }
                s.sinceLast = 0
                return true
            }
        }
    }
}
