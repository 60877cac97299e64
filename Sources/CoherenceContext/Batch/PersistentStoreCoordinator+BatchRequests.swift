import Foundation

extension PersistentStoreCoordinator {
    /// Runs a batch insert (see ``BatchInsertRequest``); a uniqueness conflict is resolved with
    /// the request's merge policy, else ``MergePolicy/error``. Runs on the calling thread.
    /// - Throws: the request's errors; nothing is written then.
    @discardableResult
    public func execute<Entity>(_ request: BatchInsertRequest<Entity>) throws(CoherenceError) -> BatchInsertResult {
        try execute(request, mergePolicy: request.mergePolicy ?? .error)
    }

    /// Runs a batch update (see ``BatchUpdateRequest``) on the calling thread.
    /// - Throws: the request's errors; nothing is written then.
    @discardableResult
    public func execute<Entity>(_ request: BatchUpdateRequest<Entity>) throws(CoherenceError) -> BatchUpdateResult {
        let result = try executeBatch(request.storeRequest(in: managedObjectModel), affectedStores: request.affectedStores)
        return BatchResult(result, type: request.resultType)
    }

    /// Runs a batch delete (see ``BatchDeleteRequest``) on the calling thread.
    /// - Throws: the request's errors; nothing is deleted then.
    @discardableResult
    public func execute<Entity>(_ request: BatchDeleteRequest<Entity>) throws(CoherenceError) -> BatchDeleteResult {
        let result = try executeBatch(request.storeRequest(in: managedObjectModel), affectedStores: request.affectedStores)
        return BatchResult(result, type: request.resultType)
    }

    /// Runs a batch insert with `mergePolicy` for uniqueness conflicts.
    func execute<Entity>(_ request: BatchInsertRequest<Entity>, mergePolicy: MergePolicy) throws(CoherenceError) -> BatchInsertResult {
        let storeRequest = try request.storeRequest(in: managedObjectModel, mergePolicy: mergePolicy)
        let result = try executeBatch(storeRequest, affectedStores: request.affectedStores)
        return BatchResult(result, type: request.resultType)
    }
}
