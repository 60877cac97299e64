/// What a merge hook gets: every transaction fetched in this round (oldest first) and the
/// contexts to merge them into (PersistentHistoryTrackingKit 2's `MergeHookInput`).
public struct MergeHookInput: Sendable {
    /// The fetched transactions, oldest first.
    public let transactions: [PersistentHistoryTransaction]
    /// The kit's contexts.
    public let contexts: [ManagedObjectContext]

    /// Creates an input.
    public init(transactions: [PersistentHistoryTransaction], contexts: [ManagedObjectContext]) {
        self.transactions = transactions
        self.contexts = contexts
    }
}

/// A merge hook: runs before the kit's own merge, in registration order, and may finish it.
/// Throwing aborts the round: progress stays where it was, so the same transactions come again.
public typealias MergeHookCallback = @Sendable (MergeHookInput) async throws -> MergeHookResult
