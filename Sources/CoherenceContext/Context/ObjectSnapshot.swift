import Foundation

/// An object's state as a context's source (the coordinator, or a parent context) hands it over.
package struct ObjectSnapshot: Sendable {
    /// The object's ID (its entity is the concrete entity).
    package var id: ObjectID
    /// Values by slot (attributes; relationship slots are not used).
    package var values: [StoredValue]
    /// The row version.
    package var version: Int64
    /// To-one destinations, aligned with `id.entity.foreignKeyRelationships`.
    package var toOne: [ObjectID?]

    package init(id: ObjectID, values: [StoredValue], version: Int64, toOne: [ObjectID?]) {
        self.id = id
        self.values = values
        self.version = version
        self.toOne = toOne
    }

    /// A snapshot of a stored row.
    package init(row: consuming StoreRow, id: ObjectID) {
        self.id = id
        self.version = row.version
        self.toOne = Self.toOneIDs(row.values, of: row.entity, storeIdentifier: id.storeIdentifier)
        self.values = row.values
    }

    /// The to-one destinations a row's foreign keys name, aligned with
    /// `entity.foreignKeyRelationships`.
    @inline(__always)
    package static func toOneIDs(_ values: [StoredValue], of entity: EntityDescription, storeIdentifier: UUID?) -> [ObjectID?] {
        let fks = entity.foreignKeyRelationships
        if fks.isEmpty { return [] }
        var toOne: [ObjectID?] = []
        toOne.reserveCapacity(fks.count)
        for r in fks {
            if case .integer(let pk) = values[r.slot], let dest = r.destinationEntity {
                toOne.append(ObjectID(entity: dest, storeIdentifier: storeIdentifier, primaryKey: pk))
            } else {
                toOne.append(nil)
            }
        }
        return toOne
    }
}

/// Where a context gets objects from and saves them to: the coordinator, or a parent context.
package protocol ContextSource: AnyObject, Sendable {
    /// Snapshots of the objects a fetch matches (as the source sees them, with its own unsaved
    /// changes for a parent context).
    func sourceFetch(_ fetch: StoreFetch) throws(CoherenceError) -> [ObjectSnapshot]
    /// The number of objects a fetch matches.
    func sourceCount(_ fetch: StoreFetch) throws(CoherenceError) -> Int
    /// Snapshots of objects by ID (missing objects are left out).
    func sourceSnapshots(for ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: ObjectSnapshot]
    /// Destinations of a relationship for several objects.
    func sourceRelated(_ relationship: RelationshipDescription, of ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: [ObjectID]]
}

extension PersistentStoreCoordinator: ContextSource {
    package func sourceFetch(_ fetch: StoreFetch) throws(CoherenceError) -> [ObjectSnapshot] {
        try fetchRows(fetch).map { ObjectSnapshot(row: $0.row, id: $0.id) }
    }

    package func sourceCount(_ fetch: StoreFetch) throws(CoherenceError) -> Int {
        try count(fetch)
    }

    package func sourceSnapshots(for ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: ObjectSnapshot] {
        var result: [ObjectID: ObjectSnapshot] = [:]
        for (id, row) in try rows(for: ids) {
            let concrete = ObjectID(entity: row.entity, storeIdentifier: id.storeIdentifier, primaryKey: id.primaryKey)
            result[id] = ObjectSnapshot(row: row, id: concrete)
        }
        return result
    }

    package func sourceRelated(_ relationship: RelationshipDescription, of ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: [ObjectID]]
    {
        try related(relationship, of: ids)
    }
}
