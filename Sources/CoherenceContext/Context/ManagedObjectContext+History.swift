import Foundation

extension ManagedObjectContext {
    /// Executes a persistent-history request through the context's coordinator: fetches
    /// transactions or deletes them (Core Data's `execute(_:)` with an
    /// `NSPersistentHistoryChangeRequest`). History belongs to the stores, so the context's own
    /// unsaved changes play no part.
    ///
    /// ```swift
    /// var request = PersistentHistoryChangeRequest.fetchHistory(after: lastToken)
    /// request.excludedAuthors = [viewContext.transactionAuthor ?? ""]
    /// for transaction in try viewContext.execute(request).transactions {
    ///     viewContext.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
    ///     lastToken = transaction.token
    /// }
    /// ```
    ///
    /// - Throws: as `PersistentStoreCoordinator.execute(_:)`; for example
    ///   `.historyTokenExpired` when the history after the token was deleted.
    @discardableResult
    public func execute(_ request: PersistentHistoryChangeRequest) throws(CoherenceError) -> PersistentHistoryResult {
        try persistentStoreCoordinator.execute(request)
    }
}

extension ManagedObjectContext.NotificationKey {
    /// `PersistentHistoryToken`: in a notification made by
    /// ``PersistentHistoryTransaction/objectIDNotification()``, the transaction's token. A context
    /// merging such a notification first forgets the coordinator's cached rows of the objects it
    /// names (another coordinator or process may have written them).
    public static let historyToken = "historyToken"
}

extension PersistentHistoryTransaction {
    /// A did-save notification carrying this transaction's object IDs, for
    /// `mergeChanges(fromContextDidSave:)`: a context catches up with history as it would with
    /// another context's save (Core Data's `objectIDNotification()`).
    ///
    /// ```swift
    /// viewContext.perform { viewContext.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
    /// ```
    ///
    /// Its name is ``ManagedObjectContext/didSaveObjectIDsNotification``; its `userInfo` has the
    /// inserted, updated and deleted object IDs (``ManagedObjectContext/NotificationKey``), the
    /// event (author and context name included) and ``ManagedObjectContext/NotificationKey/historyToken``.
    /// Only changes that were fetched are in it: a transaction fetched without changes gives an
    /// empty notification.
    public func objectIDNotification() -> Notification {
        var event = ContextEvent(kind: .didSave, contextName: contextName)
        event.transactionAuthor = author
        for change in changes ?? [] {
            switch change.changeType {
            case .insert: event.inserted.insert(change.changedObjectID)
            case .update: event.updated.insert(change.changedObjectID)
            case .delete: event.deleted.insert(change.changedObjectID)
            }
        }
        var info = event.idUserInfo
        info[ManagedObjectContext.NotificationKey.historyToken] = token
        return Notification(name: ManagedObjectContext.didSaveObjectIDsNotification, object: nil, userInfo: info)
    }
}
