import Foundation

/// Deletes every object a fetch request matches, or objects by ID, straight in the store,
/// without managed objects, as Core Data's `NSBatchDeleteRequest`.
///
/// ```swift
/// let old = FetchRequest<Person>(predicate: #Predicate { $0.lastSeen < cutoff })
/// var request = BatchDeleteRequest(fetchRequest: old)
/// request.resultType = .objectIDs
/// let result = try context.execute(request)
/// ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [viewContext])
/// ```
///
/// Delete rules apply without loading objects, in the same transaction: **cascade** deletes the
/// destinations (and applies their rules in turn), **nullify** removes the deleted objects from
/// the destinations' inverse relationships (clearing foreign keys held by the destinations,
/// whose versions then move on), join-table rows of deleted objects go, and **deny** fails the
/// whole request with `.deleteDenied` — naming the object and the relationship — while a
/// destination is not deleted too; nothing is deleted then. **noAction** leaves destinations as
/// they are.
///
/// The fetch request's predicate, sort descriptors, limit and offset select the objects (a
/// predicate that cannot be translated fails with `.unsupportedPredicate`). IDs of objects
/// that are not in the store are ignored; a temporary ID is `.invalidRequest`.
public struct BatchDeleteRequest<Entity: ManagedObject>: Sendable {
    /// The objects to delete (nil when the request names IDs).
    public let fetchRequest: FetchRequest<Entity>?
    /// The objects to delete by ID (nil when the request has a fetch request).
    public let objectIDs: [ObjectID]?
    /// What the result holds (default ``BatchRequestResultType/statusOnly``).
    public var resultType: BatchRequestResultType = .statusOnly
    /// The stores to delete from (nil: every attached store that holds the entity).
    public var affectedStores: [PersistentStore]?

    /// A request that deletes the objects `fetchRequest` matches.
    public init(fetchRequest: FetchRequest<Entity>) {
        self.fetchRequest = fetchRequest
        self.objectIDs = nil
    }

    /// The request as stores run it.
    /// - Throws: `.unknownEntity`, `.unsupportedPredicate`, `.invalidRequest`.
    package func storeRequest(in model: ManagedObjectModel) throws(CoherenceError) -> StoreBatchRequest {
        if let fetchRequest { return .delete(StoreBatchRequest.Delete(fetch: try fetchRequest.storeFetch(in: model))) }
        return .delete(StoreBatchRequest.Delete(objectIDs: objectIDs ?? []))
    }
}

extension BatchDeleteRequest where Entity == ManagedObject {
    /// A request that deletes objects by ID (of any entities).
    ///
    /// ```swift
    /// try context.execute(BatchDeleteRequest(objectIDs: [ada.objectID, bob.objectID]))
    /// ```
    public init(objectIDs: [ObjectID]) {
        self.fetchRequest = nil
        self.objectIDs = objectIDs
    }
}
