import Foundation

/// When a ``PersistentHistoryTrackingKit`` trims the history that every author has merged
/// (PersistentHistoryTrackingKit's `TransactionCleanStrategy`).
///
/// The kit consults the strategy after each round that merged something:
///
/// ```swift
/// let kit = PersistentHistoryTrackingKit(container: connect, currentAuthor: "app", allAuthors: ["app", "widget"],
///                                        cleanStrategy: .byDuration(seconds: 60 * 60))
/// ```
public enum TransactionCleanStrategy: Sendable, Hashable {
    /// Never clean automatically (use ``PersistentHistoryTrackingKit/cleanerBuilder()``).
    case none
    /// Clean after the first merge, then after a merge only when more than `seconds` passed
    /// since the last clean (kept in memory: a new kit cleans after its first merge).
    case byDuration(seconds: TimeInterval)
    /// Clean after the first merge, then after every `times`-th merge (1st, `times`+1-th, …);
    /// `times` ≤ 1 cleans after every merge.
    case byNotification(times: Int)
}
