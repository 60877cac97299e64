import Foundation

/// An object's state as a context's source (the coordinator, or a parent context) hands it over.
package struct ObjectSnapshot: Sendable {
    /// The object's ID (its entity is the concrete entity).
    package var id: ObjectID
    /// Values by slot (attributes; relationship slots are not used).
    package var values: [StoredValue]
    /// The row version.
    package var version: Int64
    /// To-one destinations, aligned with `id.entity.foreignKeyRelationships`; nil: the ones
    /// the values' foreign-key slots name, in the object's store (a stored row's).
    package var toOne: [ObjectID?]?

    package init(id: ObjectID, values: [StoredValue], version: Int64, toOne: [ObjectID?]?) {
        self.id = id
        self.values = values
        self.version = version
        self.toOne = toOne
    }

    /// A snapshot of a stored row (its foreign keys name its to-one destinations).
    @inline(__always)
    package init(row: consuming StoreRow, id: ObjectID) {
        self.id = id
        self.version = row.version
        self.values = row.values
        self.toOne = nil
    }
}

/// Where a context gets objects from and saves them to: the coordinator, or a parent context.
package protocol ContextSource: AnyObject, Sendable {
    /// Snapshots of the objects a fetch matches (as the source sees them, with its own unsaved
    /// changes for a parent context).
    func sourceFetch(_ fetch: StoreFetch) throws(CoherenceError) -> [ObjectSnapshot]
    /// Hands the objects a fetch matches to `registration`, in order, as it reads them (the
    /// single way fetched objects are registered): ``RowRegistration/begin(expectedRows:)``
    /// first, then one `add` per object. On an error the registration is left as it is (the
    /// caller abandons it).
    func sourceFetch(_ fetch: StoreFetch, into registration: inout RowRegistration) throws(CoherenceError)
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

    package func sourceFetch(_ fetch: StoreFetch, into registration: inout RowRegistration) throws(CoherenceError) {
        // One store: rows become objects as the store reads them (their IDs share its identifier).
        let read = try forEachSingleStoreRow(
            fetch, begin: { expected in registration.begin(expectedRows: expected) },
            { id, version, values in registration.add(id, version: version, values: values) })
        if read { return }
        // Several stores: their rows merged and sorted first.
        var rows = try fetchRows(fetch)
        registration.begin(expectedRows: rows.count)
        rows.reverse()  // taken from the end, in fetch order, so each row's values move
        while let (id, row) = rows.popLast() { registration.add(row, id: id) }
    }

    package func sourceCount(_ fetch: StoreFetch) throws(CoherenceError) -> Int {
        try count(fetch)
    }

    package func sourceSnapshots(for ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: ObjectSnapshot] {
        try snapshots(for: ids, in: nil)
    }

    /// Snapshots of objects by ID as `generation` shows them (nil: as the stores are now).
    func snapshots(for ids: [ObjectID], in generation: QueryGeneration?) throws(CoherenceError) -> [ObjectID: ObjectSnapshot] {
        var result: [ObjectID: ObjectSnapshot] = [:]
        for (id, row) in try rows(for: ids, in: generation) {
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
