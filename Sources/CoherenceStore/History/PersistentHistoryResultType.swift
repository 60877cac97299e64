/// What a ``PersistentHistoryChangeRequest`` returns (Core Data's
/// `NSPersistentHistoryResultType`).
public enum PersistentHistoryResultType: Sendable, Hashable {
    /// Nothing but success (``PersistentHistoryResult/count`` is still set).
    case statusOnly
    /// The number of matching transactions (fetches) or of deleted ones (deletes).
    case count
    /// The matching transactions without their changes (``PersistentHistoryTransaction/changes``
    /// is nil): reads less when only authors, dates or tokens matter.
    case transactionsOnly
    /// The matching transactions with their changes (the default).
    case transactionsAndChanges
}
