import Foundation

extension ManagedObjectContext {
    /// Runs a batch insert in the stores, as Core Data's `execute(_:)`: the context's objects
    /// are not changed (see ``BatchInsertRequest``). A uniqueness conflict is resolved with the
    /// request's merge policy, else this context's ``mergePolicy``. Call it on the context's
    /// executor.
    /// - Throws: the request's errors (see ``BatchInsertRequest``); nothing is written then.
    @discardableResult
    public func execute<Entity>(_ request: BatchInsertRequest<Entity>) throws(CoherenceError) -> BatchInsertResult {
        assertOnExecutor()
        return try persistentStoreCoordinator.execute(request, mergePolicy: request.mergePolicy ?? mergePolicy)
    }

    /// Runs a batch update in the stores, as Core Data's `execute(_:)`: the context's objects
    /// keep their values until they are refreshed or the changes merged (see
    /// ``BatchUpdateRequest``). Call it on the context's executor.
    /// - Throws: the request's errors (see ``BatchUpdateRequest``); nothing is written then.
    @discardableResult
    public func execute<Entity>(_ request: BatchUpdateRequest<Entity>) throws(CoherenceError) -> BatchUpdateResult {
        assertOnExecutor()
        return try persistentStoreCoordinator.execute(request)
    }

    /// Runs a batch delete in the stores, as Core Data's `execute(_:)`: the context's objects
    /// stay registered until the changes are merged (see ``BatchDeleteRequest``). Call it on the
    /// context's executor.
    /// - Throws: the request's errors (see ``BatchDeleteRequest``); nothing is deleted then.
    @discardableResult
    public func execute<Entity>(_ request: BatchDeleteRequest<Entity>) throws(CoherenceError) -> BatchDeleteResult {
        assertOnExecutor()
        return try persistentStoreCoordinator.execute(request)
    }
}
