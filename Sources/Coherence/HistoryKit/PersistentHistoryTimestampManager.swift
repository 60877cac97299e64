import Foundation

/// Keeps each author's latest merged transaction date for a ``PersistentHistoryTracker``
/// (RCDataKit's protocol). The tracker writes its dates here as well as its transaction
/// numbers in the store (which decide what is fetched).
///
/// ```swift
/// final class MemoryDates: PersistentHistoryTimestampManager, @unchecked Sendable { … }
/// ```
public protocol PersistentHistoryTimestampManager: Sendable {
    /// The authors with a recorded date.
    var storedTransactionDateAuthors: [TransactionAuthor] { get }
    /// The earliest of the latest dates of `authors` (nil: of every author with a date); nil
    /// when none has one.
    func latestHistoryTransactionDate(authors: [TransactionAuthor]?) -> Date?
    /// Sets each author's date (nil removes it).
    func updateLatestHistoryTransactionDate(_ updates: [TransactionAuthor: Date?])
}

extension PersistentHistoryTimestampManager {
    /// One author's latest date.
    public func latestHistoryTransactionDate(author: TransactionAuthor) -> Date? { latestHistoryTransactionDate(authors: [author]) }

    /// Sets one author's date (nil removes it).
    public func updateLatestHistoryTransactionDate(author: TransactionAuthor, date: Date?) {
        updateLatestHistoryTransactionDate([author: date])
    }
}
