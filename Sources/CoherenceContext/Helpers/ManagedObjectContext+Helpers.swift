import Foundation

extension ManagedObjectContext {
    /// Saves when there are changes.
    ///
    /// ```swift
    /// if try context.saveIfNeeded() { print("saved") }
    /// ```
    /// - Returns: whether it saved.
    /// - Throws: the save's error (the store is left as it was).
    @discardableResult
    public func saveIfNeeded() throws(CoherenceError) -> Bool {
        guard hasChanges else { return false }
        try save()
        return true
    }

    /// The object with `id`, loaded, as a `T`.
    ///
    /// ```swift
    /// let person = try context.existing(Person.self, withID: id)
    /// ```
    /// - Throws: `.objectNotFound` when there is no such object; `.typeMismatch` when the object
    ///   is not a `T` (the error's ``CoherenceError/entityName`` names the entity found); the
    ///   errors of `existingObject(with:)`.
    public func existing<T: ManagedObject>(_ type: T.Type, withID id: ObjectID) throws(CoherenceError) -> T {
        let object = try existingObject(with: id)
        guard let typed = object as? T else {
            throw CoherenceError(
                .typeMismatch, "\(id) is a \(object.entity.name), not a \(T.self).", entity: object.entity.name, objectID: id)
        }
        return typed
    }

    /// The object a typed ID names, loaded.
    /// - Throws: as ``existing(_:withID:)``.
    public func existingObject<T: ManagedObject>(with id: TypedObjectID<T>) throws(CoherenceError) -> T {
        try existing(T.self, withID: id.objectID)
    }

    /// The objects of `T` with the given IDs, in one fetch (unsaved changes included): IDs of
    /// objects that do not exist (or are not `T`s) are skipped. The order is not defined.
    ///
    /// ```swift
    /// let people = try context.existing(Person.self, withIDs: selection)
    /// ```
    /// - Throws: the fetch's errors.
    public func existing<T: ManagedObject>(_ type: T.Type, withIDs ids: [ObjectID]) throws(CoherenceError) -> [T] {
        if ids.isEmpty { return [] }
        let list: [ObjectID?] = ids
        let request = FetchRequest<T>(predicate: Predicate<T> { PredicateExpressions.ObjectIdentity(root: $0, objectIDs: list) })
        var fetch = request
        fetch.returnsObjectsAsFaults = false
        return try self.fetch(fetch)
    }

    /// Deletes the objects of `T` that `predicate` matches (every one when nil), fetching only
    /// their IDs first. Nothing is saved: the deletes are pending changes of the context.
    ///
    /// ```swift
    /// try context.removeInstances(of: Person.self, matching: \.age < 18)
    /// try context.save()
    /// ```
    /// - Throws: the fetch's errors (nothing is deleted).
    public func removeInstances<T: ManagedObject>(of type: T.Type, matching predicate: Predicate<T>? = nil) throws(CoherenceError) {
        for id in try fetchObjectIDs(FetchRequest<T>(predicate: predicate)) {
            delete(object(with: id))
        }
    }
}
