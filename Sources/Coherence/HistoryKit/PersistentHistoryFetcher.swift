import Foundation

/// Fetches the transactions a ``PersistentHistoryTracker`` merges, in place of its own fetch
/// (RCDataKit's protocol).
///
/// The tracker's own fetch reads, per store, the transactions after the current author's
/// progress (by transaction number) that the current author did not write — transactions
/// without an author included.
///
/// ```swift
/// struct ImportsOnly: PersistentHistoryFetcher {
///     func fetchTransactions(workerContext: ManagedObjectContext, minimumDate: Date) throws -> [PersistentHistoryTransaction] {
///         var request = PersistentHistoryChangeRequest.fetchHistory(after: minimumDate)
///         request.authors = ["importer"]
///         return try workerContext.performAndWait { try workerContext.execute(request).transactions }
///     }
/// }
/// ```
public protocol PersistentHistoryFetcher: Sendable {
    /// The transactions written after `minimumDate` to merge, oldest first. `workerContext` is a
    /// private context of the tracker's coordinator.
    func fetchTransactions(workerContext: ManagedObjectContext, minimumDate: Date) throws -> [PersistentHistoryTransaction]
}
