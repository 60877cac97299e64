/// Objects changed since ObjectsDidChange was last posted.
package struct PendingChanges {
    /// Inserted objects (an array: inserting must not hash; deleted ones are filtered when posting).
    var inserted: [ManagedObject] = []
    /// Updated objects, each once (objects in it carry the `.pendingUpdate` flag).
    var updated: [ManagedObject] = []
    var deleted: [ObjectIdentifier: ManagedObject] = [:]
    var refreshed: [ObjectIdentifier: ManagedObject] = [:]
    var invalidated: [ObjectIdentifier: ManagedObject] = [:]
    var invalidatedAll = false
    /// IDs from merged saves (objects that need not be registered here).
    var mergedInserted: Set<ObjectID> = []
    var mergedUpdated: Set<ObjectID> = []
    var mergedDeleted: Set<ObjectID> = []
    var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && refreshed.isEmpty && invalidated.isEmpty && !invalidatedAll
            && mergedInserted.isEmpty && mergedUpdated.isEmpty && mergedDeleted.isEmpty
    }
}
