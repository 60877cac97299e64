import Foundation

/// The row operations a store offers a batch request, inside the store's open write
/// transaction. ``BatchExecutor`` builds every batch request out of these, so the rules
/// (validation, uniqueness, row versions, delete rules) are written once for every store.
///
/// Keys are primary keys within one entity hierarchy's table.
package protocol BatchWriter {
    /// The store's UUID (the store of every ``ObjectID`` made).
    var storeIdentifier: UUID { get }
    /// The store as errors name it.
    var storeLocation: String { get }

    /// Reserves `count` primary keys in `root`'s table; returns the first.
    mutating func allocateKeys(for root: EntityDescription, count: Int) throws(CoherenceError) -> Int64
    /// Inserts a row of `entity` at version 1 (values by slot; no foreign keys). Returns false,
    /// having written nothing, when a uniqueness constraint refuses it.
    mutating func insertRow(_ entity: EntityDescription, key: Int64, values: [StoredValue]) throws(CoherenceError) -> Bool
    /// How many rows of `entity` ``insertRows(_:_:)`` takes at once; 1 (the default) inserts
    /// row by row with ``insertRow(_:key:values:)``.
    func insertChunkSize(_ entity: EntityDescription) -> Int
    /// Inserts rows of `entity` at version 1, all of them or none: returns false, having written
    /// nothing, when a uniqueness constraint refuses any of them (the executor then inserts them
    /// row by row). The default returns false.
    mutating func insertRows(_ entity: EntityDescription, _ rows: [(key: Int64, values: [StoredValue])]) throws(CoherenceError) -> Bool
    /// For each uniqueness constraint of `entity` (and its ancestors) whose values in `values`
    /// are all non-nil: the stored rows holding the same values.
    mutating func uniquenessMatches(_ entity: EntityDescription, values: [StoredValue]) throws(CoherenceError) -> [(
        constraint: [String], rows: [ObjectID]
    )]
    /// The stored row of an object, or nil.
    mutating func row(_ id: ObjectID) throws(CoherenceError) -> StoreRow?
    /// Sets `properties` (attributes or foreign keys) to `values` on the rows `keys` of
    /// `entity`'s table and moves each row's version on by one. Returns false, having written
    /// nothing, when a uniqueness constraint refuses it.
    mutating func updateRows(
        _ entity: EntityDescription, keys: [Int64], properties: [PropertyDescription],
        values: [StoredValue]
    ) throws(CoherenceError) -> Bool
    /// The keys and entity numbers of the rows a fetch matches (in the fetch's order), and for
    /// each of `foreignKeys` (to-one relationships kept in the fetched table) the rows' values,
    /// by row key (rows without one, or of an entity without the relationship, left out).
    mutating func keys(matching fetch: StoreFetch, foreignKeys: [RelationshipDescription]) throws(CoherenceError) -> (
        keys: [(primaryKey: Int64, entityNumber: Int)], foreignKeys: [[Int64: Int64]]
    )
    /// Those of `keys` that are rows of `entity` or its sub-entities, with their entity numbers.
    mutating func existingKeys(of entity: EntityDescription, among keys: [Int64]) throws(CoherenceError) -> [(
        primaryKey: Int64, entityNumber: Int
    )]
    /// The destinations of a relationship, by source key.
    mutating func related(_ relationship: RelationshipDescription, sources: [Int64]) throws(CoherenceError) -> RelatedKeys
    /// Removes the join-table rows of a relationship whose source (or, when `destinations`,
    /// destination) is one of `keys`.
    mutating func deleteJoinRows(_ relationship: RelationshipDescription, keys: [Int64], destinations: Bool) throws(CoherenceError)
    /// Removes the rows `keys` of `root`'s table.
    mutating func deleteRows(_ root: EntityDescription, keys: [Int64]) throws(CoherenceError)
    /// Removes the rows a fetch matches: those ``keys(matching:foreignKeys:)`` just returned
    /// (call it before anything else changes).
    mutating func deleteRows(matching fetch: StoreFetch) throws(CoherenceError)
    /// Whether ``record(_:)`` records anything (persistent history is on): every row is then
    /// listed, even for a request that asks only for a count, and deleted rows keep their
    /// tombstones. The default is false.
    var recordsChanges: Bool { get }
    /// The values of the stored rows of `ids`, as they are now in the open transaction (rows
    /// that do not exist are left out): a delete's tombstones are read through it before its
    /// rows go. Asked only when ``recordsChanges``; the default reads ``row(_:)`` by row.
    mutating func storedValues(of ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: [StoredValue]]
    /// Records the request's history transaction in the same transaction (persistent history).
    /// The default records nothing.
    mutating func record(_ transaction: HistoryTransactionRecord) throws(CoherenceError)
}

extension BatchWriter {
    package func insertChunkSize(_ entity: EntityDescription) -> Int { 1 }
    package mutating func insertRows(
        _ entity: EntityDescription, _ rows: [(key: Int64, values: [StoredValue])]
    ) throws(CoherenceError) -> Bool { false }
    package var recordsChanges: Bool { false }
    package mutating func storedValues(of ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: [StoredValue]] {
        var result: [ObjectID: [StoredValue]] = [:]
        for id in ids { if let r = try row(id) { result[id] = r.values } }
        return result
    }
    package mutating func record(_ transaction: HistoryTransactionRecord) throws(CoherenceError) {}
}

extension BatchWriter {
    /// ``uniquenessMatches(_:values:)`` of a store that finds one constraint's matches with a
    /// query: `matches` returns the keys and entity numbers of the stored rows of `entity`'s
    /// hierarchy holding `values` in the properties of a constraint declared by an entity.
    package func uniquenessMatches(
        _ entity: EntityDescription, values: [StoredValue],
        matches: (_ declaringEntity: EntityDescription, _ properties: [PropertyDescription]) throws(CoherenceError) -> [(Int64, Int)]
    ) throws(CoherenceError) -> [(constraint: [String], rows: [ObjectID])] {
        var result: [(constraint: [String], rows: [ObjectID])] = []
        let hierarchy = SQLGenerator.hierarchy(of: entity.rootEntity)
        var declaring: EntityDescription? = entity
        while let e = declaring {
            for constraint in e.uniquenessConstraints {
                let properties = constraint.compactMap { e.propertiesByName[$0] }
                // Nil values never collide (unique indexes let NULLs repeat).
                guard properties.count == constraint.count, !properties.contains(where: { values[$0.slot].isNull }) else { continue }
                let rows = try matches(e, properties).compactMap { key, number in
                    hierarchy.first { $0.entityNumber == number }.map {
                        ObjectID(entity: $0, storeIdentifier: storeIdentifier, primaryKey: key)
                    }
                }
                result.append((constraint, rows))
            }
            declaring = e.superentity
        }
        return result
    }
}
