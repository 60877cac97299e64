/// What a ``PersistentHistoryChange`` did to its object (Core Data's
/// `NSPersistentHistoryChangeType`).
public enum PersistentHistoryChangeType: Int, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The object was inserted.
    case insert
    /// The object's stored properties changed.
    case update
    /// The object was deleted.
    case delete

    /// `insert`, `update` or `delete`.
    public var description: String {
        switch self {
        case .insert: return "insert"
        case .update: return "update"
        case .delete: return "delete"
        }
    }
}
