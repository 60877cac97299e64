import Foundation

/// How a ``BasicDataStack`` tracks persistent history (RCDataKit's
/// `PersistentHistoryTrackingOptions`): with options, its store records history and posts
/// remote changes, and the stack builds a ``PersistentHistoryTracker`` (its ``BasicDataStack/historyTracker``)
/// from them, for the stack's main author.
///
/// ```swift
/// let stack = try BasicDataStack(
///     SchoolModel.self, mainAuthor: "app", persistentHistoryOptions: PersistentHistoryTrackingOptions(maxTransactionAge: 3600))
/// await stack.historyTracker?.startMonitoring()
/// ```
public struct PersistentHistoryTrackingOptions: Sendable {
    /// History older than this is deleted (nil: the tracker's default, seven days).
    public var maxTransactionAge: TimeInterval?
    /// Replaces the tracker's fetch.
    public var customFetcher: (any PersistentHistoryFetcher)?
    /// Replaces the tracker's merge.
    public var customMerger: (any PersistentHistoryMerger)?
    /// Replaces the tracker's clean.
    public var customCleaner: (any PersistentHistoryCleaner)?
    /// Also gets the date of each merge's last transaction.
    public var timeStampManager: (any PersistentHistoryTimestampManager)?
    /// Receives the tracker's messages (nil: ``CoherenceLogging``).
    public var logger: (any DataStackLogger)?

    /// Options for the tracker; every argument is optional and nil takes the tracker's default.
    public init(
        maxTransactionAge: TimeInterval? = nil, customFetcher: (any PersistentHistoryFetcher)? = nil,
        customMerger: (any PersistentHistoryMerger)? = nil, customCleaner: (any PersistentHistoryCleaner)? = nil,
        timeStampManager: (any PersistentHistoryTimestampManager)? = nil, logger: (any DataStackLogger)? = nil
    ) {
        self.maxTransactionAge = maxTransactionAge
        self.customFetcher = customFetcher
        self.customMerger = customMerger
        self.customCleaner = customCleaner
        self.timeStampManager = timeStampManager
        self.logger = logger
    }

    /// A tracker of `container` for `currentAuthor`, with these options.
    func tracker(currentAuthor: TransactionAuthor, container: any PersistentStack) -> PersistentHistoryTracker {
        PersistentHistoryTracker(
            container: container, currentAuthor: currentAuthor, timestampManager: timeStampManager,
            maxTransactionAge: maxTransactionAge ?? 60 * 60 * 24 * 7, customFetcher: customFetcher, customMerger: customMerger,
            customCleaner: customCleaner, logger: logger)
    }
}
