import Foundation

/// What a batch request did, as Core Data's `NSBatchInsertResult`, `NSBatchUpdateResult` and
/// `NSBatchDeleteResult` (``BatchInsertResult``, ``BatchUpdateResult`` and
/// ``BatchDeleteResult`` name it for each request).
///
/// A request that fails throws, so a result always reports success; what else it holds depends
/// on the request's ``BatchRequestResultType``:
///
/// | `resultType` | ``result`` | ``count`` | ``objectIDs`` | change sets |
/// |---|---|---|---|---|
/// | ``BatchRequestResultType/statusOnly`` | `true` | nil | nil | empty |
/// | ``BatchRequestResultType/count`` | the count | the count | nil | empty |
/// | ``BatchRequestResultType/objectIDs`` | the IDs | their number | the IDs | filled |
///
/// Batch requests change the store without telling contexts: merge the changes into the
/// contexts that should see them.
///
/// ```swift
/// var request = BatchUpdateRequest<Person>(predicate: #Predicate { $0.age >= 65 },
///                                          propertiesToUpdate: ["retired": true])
/// request.resultType = .objectIDs
/// let result = try context.execute(request)
/// ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [viewContext])
/// ```
public struct BatchResult: Sendable, CustomStringConvertible {
    /// What the request asked for.
    public let resultType: BatchRequestResultType
    /// The number of objects the request named: rows inserted (or, for rows that met a stored
    /// row on a uniqueness constraint, stored rows updated or kept), updated, or deleted by the
    /// request itself (not those its delete rules deleted). Nil for ``BatchRequestResultType/statusOnly``.
    public let count: Int?
    /// The IDs of those objects, in order (``BatchRequestResultType/objectIDs`` only).
    public let objectIDs: [ObjectID]?
    /// Every object inserted (``BatchRequestResultType/objectIDs`` only; else empty).
    public let insertedObjectIDs: Set<ObjectID>
    /// Every object updated: by the request, by an insert that updated a stored row, or by a
    /// nullify rule that cleared its foreign key to a deleted object
    /// (``BatchRequestResultType/objectIDs`` only).
    public let updatedObjectIDs: Set<ObjectID>
    /// Every object deleted, delete rules included (``BatchRequestResultType/objectIDs`` only).
    public let deletedObjectIDs: Set<ObjectID>

    package init(_ result: StoreBatchResult, type: BatchRequestResultType) {
        resultType = type
        count = type == .statusOnly ? nil : result.count
        guard type == .objectIDs else {
            objectIDs = nil
            insertedObjectIDs = []
            updatedObjectIDs = []
            deletedObjectIDs = []
            return
        }
        objectIDs = result.objectIDs
        var inserted = Set<ObjectID>(), updated = Set<ObjectID>(), deleted = Set<ObjectID>()
        for change in result.changes {
            switch change.kind {
            case .insert: inserted.insert(change.objectID)
            case .update: updated.insert(change.objectID)
            case .delete: deleted.insert(change.objectID)
            }
        }
        insertedObjectIDs = inserted
        updatedObjectIDs = updated
        deletedObjectIDs = deleted
    }

    /// Always true: a request that fails throws instead.
    public var status: Bool { true }

    /// The result as Core Data's `result` gives it: `true`, the count, or the IDs.
    public var result: any Sendable {
        switch resultType {
        case .count: return count ?? 0
        case .objectIDs: return objectIDs ?? []
        default: return true
        }
    }

    /// The change sets keyed as a did-save notification's object IDs
    /// (``ManagedObjectContext/NotificationKey/insertedObjectIDs``, `updatedObjectIDs`,
    /// `deletedObjectIDs`; a key only when its set is not empty), ready for
    /// ``ManagedObjectContext/mergeChanges(fromRemoteContextSave:into:)``.
    public var changes: [AnyHashable: Any] {
        var d: [AnyHashable: Any] = [:]
        if !insertedObjectIDs.isEmpty { d[ManagedObjectContext.NotificationKey.insertedObjectIDs] = insertedObjectIDs }
        if !updatedObjectIDs.isEmpty { d[ManagedObjectContext.NotificationKey.updatedObjectIDs] = updatedObjectIDs }
        if !deletedObjectIDs.isEmpty { d[ManagedObjectContext.NotificationKey.deletedObjectIDs] = deletedObjectIDs }
        return d
    }

    /// The result type and what it holds, for example `BatchResult(objectIDs: 3; +3 ~0 -0)`.
    public var description: String {
        switch resultType {
        case .objectIDs:
            return
                "BatchResult(objectIDs: \(objectIDs?.count ?? 0); +\(insertedObjectIDs.count) ~\(updatedObjectIDs.count) -\(deletedObjectIDs.count))"
        case .count: return "BatchResult(count: \(count ?? 0))"
        default: return "BatchResult(statusOnly)"
        }
    }
}

/// The result of a ``BatchInsertRequest``, as Core Data's `NSBatchInsertResult`.
public typealias BatchInsertResult = BatchResult
/// The result of a ``BatchUpdateRequest``, as Core Data's `NSBatchUpdateResult`.
public typealias BatchUpdateResult = BatchResult
/// The result of a ``BatchDeleteRequest``, as Core Data's `NSBatchDeleteResult`.
public typealias BatchDeleteResult = BatchResult
