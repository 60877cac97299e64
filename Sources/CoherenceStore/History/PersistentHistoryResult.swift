/// The result of executing a ``PersistentHistoryChangeRequest`` (Core Data's
/// `NSPersistentHistoryResult`).
///
/// ```swift
/// let fetched = try context.execute(.fetchHistory(after: token))
/// print(fetched.transactions.count)
/// let deleted = try context.execute(.deleteHistory(before: token))
/// print(deleted.count, "transactions deleted")
/// ```
public struct PersistentHistoryResult: Sendable {
    /// The request's result type.
    public let resultType: PersistentHistoryResultType
    /// The fetched transactions, oldest first (empty for deletes and for the result types
    /// ``PersistentHistoryResultType/count`` and ``PersistentHistoryResultType/statusOnly``).
    public let transactions: [PersistentHistoryTransaction]
    /// The number of transactions fetched, counted or deleted.
    public let count: Int

    package init(resultType: PersistentHistoryResultType, transactions: [PersistentHistoryTransaction], count: Int) {
        self.resultType = resultType
        self.transactions = transactions
        self.count = count
    }
}
