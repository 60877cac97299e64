import Foundation

/// The conflicts a save on a SQL store reports, made the same way by every such store from
/// what its database answers.
extension SaveKeys {
    /// A version conflict of `id`: the row moved on to `row` (nil: it was deleted).
    package static func versionConflict(
        id: ObjectID, values: [StoredValue], cached: [StoredValue]?, oldVersion: Int64, row: StoreRow?
    ) -> SaveConflict {
        SaveConflict(
            kind: .version, objectID: id, objectValues: values, cachedValues: cached,
            persistedValues: row?.values, oldVersion: oldVersion, newVersion: row?.version ?? 0)
    }

    /// The uniqueness conflicts of the row of `id` with `values`: for each uniqueness constraint
    /// of its entity and its ancestors, the other rows `matches` finds (keys and entity numbers
    /// of the rows whose constrained properties equal the row's), named by the temporary IDs of
    /// this save's inserts where they are some; `current` reads a row's stored version and
    /// values. `reportAs`: the ID the conflicts name (an insert's temporary ID).
    /// - Throws: `.conflict` when a constraint failed but no other row matches; what `matches`
    ///   and `current` throw.
    package mutating func uniquenessConflicts(
        id: ObjectID, values: [StoredValue], cached: [StoredValue]?, oldVersion: Int64, reportAs: ObjectID?,
        matches: (_ declaring: EntityDescription, _ properties: [PropertyDescription]) throws -> [(primaryKey: Int64, entityNumber: Int)],
        current: (ObjectID) throws -> StoreRow?
    ) throws -> [SaveConflict] {
        var conflicts: [SaveConflict] = []
        var entity: EntityDescription? = id.entity
        while let e = entity {
            for constraint in e.uniquenessConstraints {
                let properties = constraint.compactMap { e.propertiesByName[$0] }
                var others: [ObjectID] = []
                for (pk, number) in try matches(e, properties) where pk != id.primaryKey {
                    let other = e.managedObjectModel?.entities.first { $0.entityNumber == number } ?? e
                    let otherID = ObjectID(entity: other, storeIdentifier: storeIdentifier, primaryKey: pk)
                    others.append(temporaryID(for: otherID) ?? otherID)
                }
                guard let first = others.first else { continue }
                let row = try current(first.isTemporaryID ? permanentID(for: first) ?? first : first)
                conflicts.append(
                    SaveConflict(
                        kind: .uniqueness, objectID: reportAs ?? id, objectValues: values, cachedValues: cached,
                        persistedValues: row?.values, oldVersion: oldVersion, newVersion: row?.version ?? 0,
                        constraint: constraint, conflictingObjectIDs: others))
            }
            entity = e.superentity
        }
        if conflicts.isEmpty {
            // The row's own key is taken: an object saved before and inserted again (after the
            // context's `reset()`, say), as the in-memory store says it.
            if let r = reportAs, !r.isTemporaryID, (try? current(id)) != nil {
                throw CoherenceError(
                    .conflict, "\(id) cannot be inserted: the store holds a row with its key.",
                    entity: id.entity.name, objectID: id, store: location)
            }
            throw CoherenceError(
                .conflict, "A uniqueness constraint failed for \(id), but no conflicting row was found.",
                entity: id.entity.name, objectID: id, store: location)
        }
        return conflicts
    }
}
