import Foundation

extension ManagedObjectContext {
    /// This context's instance of `object`, which may belong to another context (of this
    /// coordinator or of another one on the same store, such as a dual-coordinator container's
    /// writer coordinator). An object of this context is refreshed (keeping its unsaved changes)
    /// and returned; otherwise the object with the same ID is returned, loaded and checked to
    /// exist. Call it on this context's executor.
    ///
    /// ```swift
    /// let imported: Person = …                                // from an importer context
    /// let shown = try viewContext.localInstance(of: imported)  // the view context's Person
    /// ```
    ///
    /// - Throws: for an object of another context, `.objectNotFound` when it is not saved (a
    ///   temporary ID), its row was deleted or it is not in this context's stores (an object of
    ///   this context is refreshed and returned, whatever its row's state; so is this context's
    ///   instance when this context deleted it and has not saved); `.typeMismatch` when this context's object of that ID
    ///   is not a `T`; the errors reading it meets.
    public func localInstance<T: ManagedObject>(of object: T) throws(CoherenceError) -> T {
        assertOnExecutor()
        if object.managedObjectContext === self {
            if !object.isInserted { refresh(object, mergeChanges: true) }
            return object
        }
        guard let id = object._objectID, !id.isTemporaryID else {
            throw CoherenceError(
                .objectNotFound, "An unsaved object has no instance in another context; save it first.", entity: object.entity.name,
                objectID: object._objectID)
        }
        guard let store = id.storeIdentifier, persistentStoreCoordinator.persistentStore(withIdentifier: store) != nil else {
            throw CoherenceError(
                .objectNotFound, "\(id) is not in a store of the context's coordinator.", entity: id.entity.name, objectID: id)
        }
        // Entities are matched by name: the other context's model may be another instance of the
        // same model.
        guard let entity = managedObjectModel.entitiesByName[id.entity.name] else {
            throw CoherenceError(
                .unknownEntity, "The context's model has no entity '\(id.entity.name)'.", entity: id.entity.name, objectID: id)
        }
        let local = entity === id.entity ? id : ObjectID(entity: entity, storeIdentifier: store, primaryKey: id.primaryKey)
        let found = try existingObject(with: local)
        guard let typed = found as? T else {
            throw CoherenceError(
                .typeMismatch, "\(local) is a \(type(of: found)) in this context, not a \(T.self).", entity: entity.name, objectID: local)
        }
        return typed
    }
}
