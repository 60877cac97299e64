import Foundation

/// A request to read or trim persistent history, as Core Data's `NSPersistentHistoryChangeRequest`.
///
/// Make one with a factory — `fetchHistory(after:)` with a token, a date or a transaction, or
/// `deleteHistory(before:)` with the same — narrow a fetch with the filters below (applied in the
/// store's query), and execute it with `context.execute(_:)` or the coordinator's
/// `PersistentStoreCoordinator.execute(_:)`:
///
/// ```swift
/// var request = PersistentHistoryChangeRequest.fetchHistory(after: lastToken)
/// request.excludedAuthors = ["app"]          // what others wrote
/// request.entityNames = ["Person"]           // changes of Person (and its sub-entities)
/// let transactions = try context.execute(request).transactions
///
/// try context.execute(.deleteHistory(before: Date().addingTimeInterval(-7 * 86_400)))
/// ```
///
/// A request with a token reads (or trims) that token's store; one with a date or no token,
/// every attached store that tracks history (``affectedStores`` to choose). Fetching after a
/// token whose following transactions were deleted fails with
/// ``CoherenceError/Code/historyTokenExpired``.
public struct PersistentHistoryChangeRequest: Sendable, CustomStringConvertible {
    package enum Operation: Sendable { case fetch, delete }
    package enum Bound: Sendable {
        case token(PersistentHistoryToken?)
        case date(Date)
    }

    package let operation: Operation
    package let bound: Bound

    /// What executing the request returns: for fetches ``PersistentHistoryResultType/transactionsAndChanges``
    /// by default, for deletes ``PersistentHistoryResultType/statusOnly`` (the result's
    /// ``PersistentHistoryResult/count`` is the number of deleted transactions either way).
    public var resultType: PersistentHistoryResultType
    /// Fetch only transactions written by one of these authors (nil: any author, including none).
    public var authors: Set<String>?
    /// Fetch no transaction written by one of these authors (transactions without an author are
    /// kept). Typically your own author, to read what others changed.
    public var excludedAuthors: Set<String> = []
    /// Fetch only transactions saved by contexts with one of these names (nil: any).
    public var contextNames: Set<String>?
    /// Fetch only changes of these entities and their sub-entities, and only transactions that
    /// have some (nil: every entity).
    /// - Throws when executed: `.unknownEntity` for a name the model does not have.
    public var entityNames: Set<String>?
    /// The most transactions to fetch, oldest first (0: no limit). Fetch the rest after the last
    /// one's token.
    public var fetchLimit: Int = 0
    /// The stores to read or trim (nil: the token's store, or every attached store that tracks
    /// history).
    public var affectedStores: [PersistentStore]?

    private init(operation: Operation, bound: Bound) {
        self.operation = operation
        self.bound = bound
        self.resultType = operation == .fetch ? .transactionsAndChanges : .statusOnly
    }

    /// The transactions after `token` (nil: every transaction), oldest first.
    ///
    /// ```swift
    /// let result = try context.execute(.fetchHistory(after: lastToken))
    /// ```
    public static func fetchHistory(after token: PersistentHistoryToken?) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(operation: .fetch, bound: .token(token))
    }

    /// The transactions written after `date`, oldest first.
    public static func fetchHistory(after date: Date) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(operation: .fetch, bound: .date(date))
    }

    /// The transactions after `transaction`, oldest first.
    public static func fetchHistory(after transaction: PersistentHistoryTransaction) -> PersistentHistoryChangeRequest {
        fetchHistory(after: transaction.token)
    }

    /// Deletes the transactions before `token`, not the token's own (nil: every transaction).
    ///
    /// ```swift
    /// try context.execute(.deleteHistory(before: oldestTokenStillNeeded))
    /// ```
    public static func deleteHistory(before token: PersistentHistoryToken?) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(operation: .delete, bound: .token(token))
    }

    /// Deletes the transactions written before `date`.
    public static func deleteHistory(before date: Date) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(operation: .delete, bound: .date(date))
    }

    /// Deletes the transactions before `transaction`, not the transaction itself.
    public static func deleteHistory(before transaction: PersistentHistoryTransaction) -> PersistentHistoryChangeRequest {
        deleteHistory(before: transaction.token)
    }

    /// The request's token (nil for a date, or for every transaction).
    public var token: PersistentHistoryToken? {
        if case .token(let t) = bound { return t }
        return nil
    }

    /// The request's date (nil for a token or a transaction).
    public var date: Date? {
        if case .date(let d) = bound { return d }
        return nil
    }

    /// Whether the request deletes history (else it fetches).
    public var isDelete: Bool { operation == .delete }

    /// Whether a fetch's filters are set.
    var hasFilters: Bool {
        authors != nil || !excludedAuthors.isEmpty || contextNames != nil || entityNames != nil || fetchLimit != 0
    }

    /// The operation and its bound, for example `fetchHistory(after: <PersistentHistoryToken 3 …>)`.
    public var description: String {
        let what: String
        switch bound {
        case .token(let t): what = t.map { "\($0)" } ?? "nil"
        // (Foundation's description of a NaN date stops the process.)
        case .date(let d):
            let t = d.timeIntervalSinceReferenceDate
            what = t.isNaN ? "Date(timeIntervalSinceReferenceDate: \(t))" : "\(d)"
        }
        return operation == .fetch ? "fetchHistory(after: \(what))" : "deleteHistory(before: \(what))"
    }
}
