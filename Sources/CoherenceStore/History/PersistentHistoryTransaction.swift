import Foundation

/// One save recorded in a store's persistent history, as Core Data's
/// `NSPersistentHistoryTransaction`: when, by whom, and which objects changed.
///
/// A save that writes to several stores records one transaction in each. Fetch them with
/// ``PersistentHistoryChangeRequest/fetchHistory(after:)-(PersistentHistoryToken?)``:
///
/// ```swift
/// let result = try context.execute(.fetchHistory(after: lastToken))
/// for transaction in result.transactions where transaction.author != "app" {
///     viewContext.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
///     lastToken = transaction.token
/// }
/// ```
public struct PersistentHistoryTransaction: Sendable, CustomStringConvertible {
    /// The transaction's position in its store's history.
    public let token: PersistentHistoryToken
    /// When the save was written (the writing process's clock).
    public let timestamp: Date
    /// The saving context's ``ManagedObjectContext/transactionAuthor``, if it had one.
    public let author: String?
    /// The saving context's name, if it had one (for a child context's changes: the name of the
    /// context that saved them to the store).
    public let contextName: String?
    /// The identifier of the store the transaction belongs to.
    public let storeID: UUID
    /// The identifier of the process that wrote it (its process ID, as text).
    public let processID: String
    /// The changes, one per object; nil when the request asked for transactions only
    /// (``PersistentHistoryResultType/transactionsOnly``). Limited to the request's entities when
    /// it named some.
    public let changes: [PersistentHistoryChange]?

    /// The transaction's number in its store's history (its token's).
    public var transactionNumber: Int64 { token.transactionNumber }

    package init(
        token: PersistentHistoryToken, timestamp: Date, author: String?, contextName: String?, processID: String,
        changes: [PersistentHistoryChange]?
    ) {
        self.token = token
        self.timestamp = timestamp
        self.author = author
        self.contextName = contextName
        self.storeID = token.storeIdentifier
        self.processID = processID
        self.changes = changes
    }

    /// The number, author, context name and change count.
    public var description: String {
        "<PersistentHistoryTransaction \(transactionNumber) author: \(author ?? "nil") context: \(contextName ?? "nil") changes: \(changes.map { "\($0.count)" } ?? "not fetched")>"
    }
}
