import Foundation

extension PersistentStoreCoordinator {
    /// Runs a batch insert (see ``BatchInsertRequest``); a uniqueness conflict is resolved with
    /// the request's merge policy, else ``MergePolicy/error``. Runs on the calling thread.
    ///
    /// A store that tracks persistent history records the request as one transaction without an
    /// author or context name; run it through a context's `execute(_:)` to record the context's
    /// ``ManagedObjectContext/transactionAuthor`` and name.
    /// - Throws: the request's errors; nothing is written then.
    @discardableResult
    public func execute<Entity>(_ request: BatchInsertRequest<Entity>) throws(CoherenceError) -> BatchInsertResult {
        try execute(request, mergePolicy: request.mergePolicy ?? .error, author: nil, contextName: nil)
    }

    /// Runs a batch update (see ``BatchUpdateRequest``) on the calling thread. History records
    /// it without an author or context name (a context's `execute(_:)` records its own).
    /// - Throws: the request's errors; nothing is written then.
    @discardableResult
    public func execute<Entity>(_ request: BatchUpdateRequest<Entity>) throws(CoherenceError) -> BatchUpdateResult {
        try execute(request, author: nil, contextName: nil)
    }

    /// Runs a batch delete (see ``BatchDeleteRequest``) on the calling thread. History records
    /// it without an author or context name (a context's `execute(_:)` records its own).
    /// - Throws: the request's errors; nothing is deleted then.
    @discardableResult
    public func execute<Entity>(_ request: BatchDeleteRequest<Entity>) throws(CoherenceError) -> BatchDeleteResult {
        try execute(request, author: nil, contextName: nil)
    }

    /// Runs a batch insert with `mergePolicy` for uniqueness conflicts; history records it under
    /// `author` and `contextName`.
    func execute<Entity>(
        _ request: BatchInsertRequest<Entity>, mergePolicy: MergePolicy, author: String?, contextName: String?
    ) throws(CoherenceError) -> BatchInsertResult {
        try run(
            request.storeRequest(in: managedObjectModel, mergePolicy: mergePolicy), request.affectedStores, request.resultType,
            author, contextName)
    }

    /// Runs a batch update; history records it under `author` and `contextName`.
    func execute<Entity>(
        _ request: BatchUpdateRequest<Entity>, author: String?, contextName: String?
    ) throws(CoherenceError) -> BatchUpdateResult {
        try run(request.storeRequest(in: managedObjectModel), request.affectedStores, request.resultType, author, contextName)
    }

    /// Runs a batch delete; history records it under `author` and `contextName`.
    func execute<Entity>(
        _ request: BatchDeleteRequest<Entity>, author: String?, contextName: String?
    ) throws(CoherenceError) -> BatchDeleteResult {
        try run(request.storeRequest(in: managedObjectModel), request.affectedStores, request.resultType, author, contextName)
    }

    /// Runs a batch request in its store form and makes its result.
    private func run(
        _ storeRequest: StoreBatchRequest, _ affectedStores: [PersistentStore]?, _ type: BatchRequestResultType, _ author: String?,
        _ contextName: String?
    ) throws(CoherenceError) -> BatchResult {
        let result = try executeBatch(storeRequest, affectedStores: affectedStores, author: author, contextName: contextName)
        return BatchResult(result, type: type)
    }
}
