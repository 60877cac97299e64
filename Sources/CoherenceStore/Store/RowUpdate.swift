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
            switch loaded {
            case .none: return nil
            case .full(let values): return values
            case .changed(let originals): return values.restoring(originals)
            }
        }
        set { loaded = newValue.map { .full($0) } ?? .none }
    }
    /// The loaded values, in one field (one reference per row to retain and release).
    @usableFromInline var loaded: LoadedValues

    /// The values an object was loaded with.
    @usableFromInline
    enum LoadedValues: Sendable {
        /// Not known.
        case none
        /// In full.
        case full([StoredValue])
        /// The loaded values of the changed slots, when the object's snapshot is sparse: the
        /// loaded values are `values` with these put back (built only when asked for).
        case changed([SlotValue])
    }

    @inlinable @inline(__always)
    package init(
        objectID: ObjectID, values: [StoredValue], changedSlots: [Int], references: [RowReference],
        expectedVersion: Int64?, cachedValues: [StoredValue]?, originals: [SlotValue]? = nil
    ) {
        self.objectID = objectID
        self.values = values
        self.changedSlots = changedSlots
        self.references = references
        self.expectedVersion = expectedVersion
        if let originals {
            self.loaded = .changed(originals)
        } else if let cachedValues {
            self.loaded = .full(cachedValues)
        } else {
            self.loaded = .none
        }
    }
}
