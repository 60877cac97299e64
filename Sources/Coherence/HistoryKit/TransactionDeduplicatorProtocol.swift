/// Removes duplicates after the kit merged transactions (PersistentHistoryTrackingKit 1.3's
/// `deduplicator`), for example objects that two processes inserted for one key.
///
/// ```swift
/// struct TagDeduplicator: TransactionDeduplicatorProtocol {
///     func callAsFunction(deduplicate transactions: [PersistentHistoryTransaction], in contexts: [ManagedObjectContext]) {
///         // look at the inserted tags of `transactions`, delete the extra ones, save
///     }
/// }
/// ```
public protocol TransactionDeduplicatorProtocol: Sendable {
    /// Called after each merge with the merged transactions and the kit's contexts, on the
    /// kit's task.
    func callAsFunction(deduplicate transactions: [PersistentHistoryTransaction], in contexts: [ManagedObjectContext])
}
