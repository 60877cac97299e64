import Foundation

extension ManagedObjectContext {
    /// Runs a batch insert in the stores, as Core Data's `execute(_:)`: the context's objects
    /// are not changed (see ``BatchInsertRequest``). A uniqueness conflict is resolved with the
    /// request's merge policy, else this context's ``mergePolicy``. A store that tracks
    /// persistent history records the request under this context's ``transactionAuthor`` and
    /// ``name``, as a save of the context. Call it on the context's executor.
    /// - Throws: the request's errors (see ``BatchInsertRequest``); nothing is written then.
    @discardableResult
    public func execute<Entity>(_ request: BatchInsertRequest<Entity>) throws(CoherenceError) -> BatchInsertResult {
        assertOnExecutor()
        return try persistentStoreCoordinator.execute(
            request, mergePolicy: request.mergePolicy ?? mergePolicy, author: transactionAuthor, contextName: name)
    }

    /// Runs a batch update in the stores, as Core Data's `execute(_:)`: the context's objects
    /// keep their values until they are refreshed or the changes merged (see
    /// ``BatchUpdateRequest``). History records it under this context's ``transactionAuthor``
    /// and ``name``. Call it on the context's executor.
    /// - Throws: the request's errors (see ``BatchUpdateRequest``); nothing is written then.
    @discardableResult
    public func execute<Entity>(_ request: BatchUpdateRequest<Entity>) throws(CoherenceError) -> BatchUpdateResult {
        assertOnExecutor()
        return try persistentStoreCoordinator.execute(request, author: transactionAuthor, contextName: name)
    }

    /// Runs a batch delete in the stores, as Core Data's `execute(_:)`: the context's objects
    /// stay registered until the changes are merged (see ``BatchDeleteRequest``). History records
    /// it under this context's ``transactionAuthor`` and ``name``, with the tombstones of the
    /// deleted rows. Call it on the context's executor.
    /// - Throws: the request's errors (see ``BatchDeleteRequest``); nothing is deleted then.
    @discardableResult
    public func execute<Entity>(_ request: BatchDeleteRequest<Entity>) throws(CoherenceError) -> BatchDeleteResult {
        assertOnExecutor()
        return try persistentStoreCoordinator.execute(request, author: transactionAuthor, contextName: name)
    }
}
