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

    package init(
        objectID: ObjectID, values: [StoredValue], changedSlots: [Int], references: [RowReference],
        expectedVersion: Int64?, cachedValues: [StoredValue]?, originals: [SlotValue]? = nil
    ) {
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
