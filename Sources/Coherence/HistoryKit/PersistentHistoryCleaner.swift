import Foundation

/// Deletes history for a ``PersistentHistoryTracker``, in place of its own clean (RCDataKit's
/// protocol).
///
/// ```swift
/// struct DateCleaner: PersistentHistoryCleaner {
///     func cleanTransactions(workerContext: ManagedObjectContext, cleanBeforeDate: Date, authors: [TransactionAuthor]?) throws {
///         try workerContext.performAndWait { _ = try workerContext.execute(.deleteHistory(before: cleanBeforeDate)) }
///     }
/// }
/// ```
public protocol PersistentHistoryCleaner: Sendable {
    /// Deletes the transactions written before `cleanBeforeDate`; `authors` are the authors
    /// with recorded progress (nil: unknown).
    func cleanTransactions(workerContext: ManagedObjectContext, cleanBeforeDate: Date, authors: [TransactionAuthor]?) throws
}
