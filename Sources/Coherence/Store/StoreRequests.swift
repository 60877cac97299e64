import Foundation

/// A row read from a store: the object's concrete entity, key, version and values by slot.
package struct StoreRow: Sendable {
    /// The concrete entity of the row.
    package var entity: EntityDescription
    /// The primary key.
    package var primaryKey: Int64
    /// The row version (optimistic locking); starts at 1 and grows by one per update.
    package var version: Int64
    /// Values by property slot: stored attributes and foreign keys (as the destination's key);
    /// defaults for transient attributes; null for to-many relationships.
    package var values: [StoredValue]

    package init(entity: EntityDescription, primaryKey: Int64, version: Int64, values: [StoredValue]) {
        self.entity = entity
        self.primaryKey = primaryKey
        self.version = version
        self.values = values
    }
}

/// A fetch as a store executes it.
package struct StoreFetch: Sendable {
    /// The entity fetched.
    package var entity: EntityDescription
    /// Whether rows of sub-entities are included.
    package var includesSubentities: Bool = true
    /// The filter, or nil for every row.
    package var predicate: QueryExpression?
    /// The ordering.
    package var sortKeys: [SortKey] = []
    /// The maximum number of rows (nil: no limit).
    package var limit: Int?
    /// Rows to skip.
    package var offset: Int = 0

    package init(entity: EntityDescription, includesSubentities: Bool = true, predicate: QueryExpression? = nil,
                 sortKeys: [SortKey] = [], limit: Int? = nil, offset: Int = 0) {
        self.entity = entity
        self.includesSubentities = includesSubentities
        self.predicate = predicate
        self.sortKeys = sortKeys
        self.limit = limit
        self.offset = offset
    }
}

/// A reference to another object in a row being written: resolved to a primary key by the
/// store, after keys of objects inserted in the same save are allocated.
package struct RowReference: Sendable {
    /// The foreign-key slot.
    package var slot: Int
    /// The destination (nil: no destination).
    package var target: ObjectID?
}

/// An object inserted by a save.
package struct RowInsert: Sendable {
    /// The object's ID (temporary, or permanent when obtained earlier).
    package var objectID: ObjectID
    /// Values by slot (foreign-key slots are filled from `references`).
    package var values: [StoredValue]
    /// Foreign keys to resolve.
    package var references: [RowReference]
}

/// An object updated by a save.
package struct RowUpdate: Sendable {
    package var objectID: ObjectID
    /// The new values by slot.
    package var values: [StoredValue]
    /// The slots that changed (only these are written).
    package var changedSlots: [Int]
    /// Foreign keys to resolve (a subset of `changedSlots`).
    package var references: [RowReference]
    /// The version the object was loaded at; nil writes without a version check.
    package var expectedVersion: Int64?
    /// The values the object was loaded with (reported in conflicts), in full.
    package var cachedValues: [StoredValue]? {
        get {
            if hasOriginals { return values.restoring(originals) }
            return hasCachedStorage ? cachedStorage : nil
        }
        set {
            cachedStorage = newValue ?? []
            hasCachedStorage = newValue != nil
            originals = []
            hasOriginals = false
        }
    }
    // The two optional arrays below are kept as an array and a flag each: with an `Optional`
    // array next to the `ObjectID`, the compiler copied every row into the change set's array
    // and destroyed the original (five retains and five releases per updated object).
    /// The loaded values in full, when `hasCachedStorage` (and not `hasOriginals`).
    private var cachedStorage: [StoredValue]
    private var hasCachedStorage: Bool
    /// The loaded values of the changed slots, when the object's snapshot is sparse
    /// (`hasOriginals`): the loaded values are `values` with these put back (built only for a
    /// conflict report).
    private var originals: [SlotValue]
    private var hasOriginals: Bool

    package init(objectID: ObjectID, values: [StoredValue], changedSlots: [Int], references: [RowReference],
                 expectedVersion: Int64?, cachedValues: [StoredValue]?, originals: [SlotValue]? = nil) {
        self.objectID = objectID
        self.values = values
        self.changedSlots = changedSlots
        self.references = references
        self.expectedVersion = expectedVersion
        self.cachedStorage = cachedValues ?? []
        self.hasCachedStorage = cachedValues != nil
        self.originals = originals ?? []
        self.hasOriginals = originals != nil
    }
}

/// An object deleted by a save.
package struct RowDelete: Sendable {
    package var objectID: ObjectID
    /// The version the object was loaded at; nil deletes without a version check.
    package var expectedVersion: Int64?
    /// The object's values (reported in conflicts).
    package var values: [StoredValue]
}

/// A change to a join table (many-to-many or to-many without inverse).
package struct JoinChange: Sendable {
    /// The relationship, from the side whose objects are `source`.
    package var relationship: RelationshipDescription
    package var source: ObjectID
    package var destination: ObjectID
}

/// Everything one save writes to one store, applied in one transaction.
package struct StoreChangeSet: Sendable {
    package var inserts: [RowInsert] = []
    package var updates: [RowUpdate] = []
    package var deletes: [RowDelete] = []
    package var joinInserts: [JoinChange] = []
    package var joinDeletes: [JoinChange] = []
    /// The stores inserted objects were assigned to (store identifier by temporary ID); other
    /// new objects go to the first attached store that holds their entity.
    package var assignedStores: [ObjectID: UUID] = [:]

    package init() {}

    package var isEmpty: Bool {
        inserts.isEmpty && updates.isEmpty && deletes.isEmpty && joinInserts.isEmpty && joinDeletes.isEmpty
    }
}

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

/// Destinations of a to-many (or inverse to-one) relationship, by source key.
package typealias RelatedKeys = [Int64: [(primaryKey: Int64, entityNumber: Int)]]
