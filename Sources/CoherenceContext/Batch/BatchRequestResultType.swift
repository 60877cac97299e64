/// What a batch request returns, as Core Data's `NSBatchInsertRequestResultType`,
/// `NSBatchUpdateRequestResultType` and `NSBatchDeleteRequestResultType` (one type for the
/// three requests).
///
/// ```swift
/// var request = BatchDeleteRequest(fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.age > 99 }))
/// request.resultType = .objectIDs
/// let ids = try context.execute(request).objectIDs ?? []
/// ```
public struct BatchRequestResultType: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: String, Hashable, Sendable { case statusOnly, count, objectIDs }
    private let kind: Kind
    /// Only whether the request succeeded (it throws otherwise): the cheapest.
    public static let statusOnly = BatchRequestResultType(kind: .statusOnly)
    /// The number of objects the request inserted, updated or deleted (``BatchResult/count``).
    public static let count = BatchRequestResultType(kind: .count)
    /// The IDs of the objects (``BatchResult/objectIDs``) and every change, delete rules
    /// included (``BatchResult/changes``), for merging into contexts.
    public static let objectIDs = BatchRequestResultType(kind: .objectIDs)
    /// `statusOnly`, `count` or `objectIDs`.
    public var description: String { kind.rawValue }
}
