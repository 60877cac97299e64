/// The kind of change an observer hook registers for (PersistentHistoryTrackingKit 2's
/// `HookOperation`).
public enum HookOperation: String, Sendable, CaseIterable {
    /// Objects inserted.
    case insert
    /// Objects updated.
    case update
    /// Objects deleted (the hook gets their ``Tombstone``).
    case delete

    init(_ type: PersistentHistoryChangeType) {
        switch type {
        case .insert: self = .insert
        case .update: self = .update
        case .delete: self = .delete
        }
    }
}
