/// Merges fetched transactions into the kit's contexts, in place of the kit's own merge
/// (PersistentHistoryTrackingKit 1.3's `merger`).
///
/// The kit's own merge refreshes each context's registered objects that changed, removes the
/// deleted ones and announces the inserted ones, on each context's queue.
///
/// ```swift
/// struct LoggingMerger: TransactionMergerProtocol {
///     func callAsFunction(merge transactions: [PersistentHistoryTransaction], into contexts: [ManagedObjectContext]) {
///         for context in contexts {
///             context.performAndWait {
///                 for t in transactions { context.mergeChanges(fromContextDidSave: t.objectIDNotification()) }
///             }
///         }
///     }
/// }
/// ```
public protocol TransactionMergerProtocol: Sendable {
    /// Merges `transactions` (oldest first) into `contexts`. Called on the kit's task, not on the
    /// contexts' queues.
    func callAsFunction(merge transactions: [PersistentHistoryTransaction], into contexts: [ManagedObjectContext])
}
