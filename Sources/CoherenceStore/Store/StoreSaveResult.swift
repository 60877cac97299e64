/// What a store reports after writing a change set.
///
/// Both arrays are aligned with the change set the store was given, so a caller maps results
/// back by position instead of hashing every object ID.
package struct StoreSaveResult: Sendable {
    /// The ID of each inserted row, aligned with the change set's `inserts`: the permanent ID
    /// given to a temporary one, or the insert's own permanent ID.
    package var insertedIDs: [ObjectID] = []
    /// The new row version of each update, aligned with the change set's `updates` (inserted
    /// rows are version 1).
    package var updatedVersions: [Int64] = []
    package init() {}

    /// Temporary → permanent IDs of the inserts of `changes` (the change set this result is for).
    /// - Complexity: O(*n*) in the number of inserts; built only when a caller needs the map.
    package func permanentIDs(for changes: StoreChangeSet) -> [ObjectID: ObjectID] {
        var map: [ObjectID: ObjectID] = [:]
        map.reserveCapacity(changes.inserts.count)
        for (i, id) in zip(changes.inserts, insertedIDs) where i.objectID.isTemporaryID { map[i.objectID] = id }
        return map
    }
}
