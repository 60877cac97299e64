import Foundation

/// Merges fetched transactions into the view context, in place of a
/// ``PersistentHistoryTracker``'s own merge (RCDataKit's protocol).
///
/// ```swift
/// struct RefreshAll: PersistentHistoryMerger {
///     func mergeTransactions(viewContext: ManagedObjectContext, transactions: [PersistentHistoryTransaction]) throws {
///         viewContext.performAndWait { viewContext.refreshAllObjects() }
///     }
/// }
/// ```
public protocol PersistentHistoryMerger: Sendable {
    /// Merges `transactions` (oldest first) into `viewContext`. An error is logged and the
    /// tracker goes on.
    func mergeTransactions(viewContext: ManagedObjectContext, transactions: [PersistentHistoryTransaction]) throws
}
