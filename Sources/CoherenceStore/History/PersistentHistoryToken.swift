import Foundation

/// A position in one store's persistent history: the transaction it names and every earlier one
/// are "before" it, as Core Data's `NSPersistentHistoryToken`.
///
/// Every ``PersistentHistoryTransaction`` has one, and
/// ``PersistentStoreCoordinator/currentPersistentHistoryToken(fromStores:)`` gives the latest. An
/// app keeps the token of the last transaction it processed (it is `Codable`) and later asks for
/// what came after it:
///
/// ```swift
/// let data = try JSONEncoder().encode(transaction.token)           // keep it
/// let token = try JSONDecoder().decode(PersistentHistoryToken.self, from: data)
/// let result = try context.execute(.fetchHistory(after: token))
/// ```
///
/// A token refers to one store (``storeIdentifier``): using it with a coordinator that does not
/// have that store attached fails with ``CoherenceError/Code/invalidHistoryToken``. Tokens of one
/// store are ordered like their transactions; tokens of different stores are ordered by
/// transaction number, then by store identifier, which says nothing about which came first.
public struct PersistentHistoryToken: Sendable, Codable, Hashable, Comparable, CustomStringConvertible {
    /// The store whose history the token belongs to (``PersistentStore/identifier``).
    public let storeIdentifier: UUID
    /// The number of the transaction the token names (numbers grow by one per transaction and are
    /// never reused, even after history is deleted); 0 names the start of the history.
    public let transactionNumber: Int64

    package init(storeIdentifier: UUID, transactionNumber: Int64) {
        self.storeIdentifier = storeIdentifier
        self.transactionNumber = transactionNumber
    }

    /// Orders by transaction number (then by store identifier, for tokens of different stores).
    public static func < (lhs: PersistentHistoryToken, rhs: PersistentHistoryToken) -> Bool {
        if lhs.transactionNumber != rhs.transactionNumber { return lhs.transactionNumber < rhs.transactionNumber }
        return lhs.storeIdentifier.uuidString < rhs.storeIdentifier.uuidString
    }

    /// `<PersistentHistoryToken 42 store UUID>`.
    public var description: String { "<PersistentHistoryToken \(transactionNumber) store \(storeIdentifier.uuidString)>" }
}
