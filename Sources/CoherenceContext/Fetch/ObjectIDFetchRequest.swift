import Foundation

/// A request for the IDs of matching objects only, as Core Data's
/// `NSFetchRequest<NSManagedObjectID>` with `resultType = .managedObjectIDResultType`: no
/// property values are read and no objects are made.
///
/// ```swift
/// let ids = try context.fetch(ObjectIDFetchRequest<Person>().where(\.age >= 18).sorted([.ascending(\.name)]))
/// let first = try context.existingObject(with: ids[0])  // a Person
/// ```
public struct ObjectIDFetchRequest<Entity: ManagedObject>: Sendable {
    /// The request whose matches' IDs are fetched (its predicate, sort descriptors, limit,
    /// offset and entity apply).
    public var request: FetchRequest<Entity>

    /// A request for the IDs of objects of `Entity` (and its sub-entities).
    public init(_ entity: Entity.Type = Entity.self, predicate: Predicate<Entity>? = nil, sortBy: [SortDescriptor<Entity>] = []) {
        request = FetchRequest(predicate: predicate, sortBy: sortBy)
    }

    /// The request with `predicate` as its filter (replacing the one it had).
    public func `where`(_ predicate: Predicate<Entity>?) -> ObjectIDFetchRequest {
        var copy = self
        copy.request.predicate = predicate
        return copy
    }

    /// The request with `descriptors` as its ordering (replacing the one it had).
    public func sorted(_ descriptors: [SortDescriptor<Entity>]) -> ObjectIDFetchRequest {
        var copy = self
        copy.request.sortDescriptors = descriptors
        return copy
    }
}

extension ManagedObjectContext {
    /// The IDs of the objects the request matches (unsaved changes included), typed.
    /// - Throws: as a fetch of `request.request`.
    public func fetch<T: ManagedObject>(_ request: ObjectIDFetchRequest<T>) throws(CoherenceError) -> [TypedObjectID<T>] {
        try fetchObjectIDs(request.request).map { TypedObjectID(unchecked: $0) }
    }
}
