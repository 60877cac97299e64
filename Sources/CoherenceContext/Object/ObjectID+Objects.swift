extension ObjectID {
    /// The IDs of some objects as a set, without an intermediate array.
    @inline(__always)
    package static func set<S: Sequence>(of objects: S) -> Set<ObjectID> where S.Element == ManagedObject {
        var ids = Set<ObjectID>(minimumCapacity: objects.underestimatedCount)
        for o in objects { ids.insert(o.objectID) }
        return ids
    }

    /// The IDs of the objects of an array as a set (each object read without retaining it).
    @inline(__always)
    package static func set(of objects: [ManagedObject]) -> Set<ObjectID> {
        var ids = Set<ObjectID>(minimumCapacity: objects.count)
        objects.forEachBorrowed { ids.insert($0.objectID) }
        return ids
    }
}
