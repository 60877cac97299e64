import Foundation

/// The state of one managed object: its current values, its committed snapshot, its lifecycle
/// flags, its relationship state, the row version it was loaded at and its committed to-one
/// destinations. A managed object keeps it in one field (`ManagedObject._state`), and contexts
/// change it only through the operations below, so the rules that tie the parts together hold
/// in one place:
///
/// - The committed snapshot (the values at load or last save) is sparse: ``originals`` lists
///   the committed value of each slot changed since, once per slot; every other slot's
///   committed value is its current one. Nil when there is no snapshot (a new object, or one
///   whose data could not be loaded). A loaded object's first change thus edits its values in
///   place, and a save that commits them frees a few entries, never a whole copy.
/// - An object whose data could not be loaded (`.loadFailed`) is a fault and has no snapshot.
/// - A prefilled object is a fault; no object is inserted and deleted at once.
/// - ``relations`` is nil or holds at least one relationship.
///
/// Debug builds check these rules (``_checkInvariants()``) after every operation that changes
/// the state.
///
/// The reads that do more than load one field are `mutating`, though they change nothing:
/// called on `object._state`, they then read the state in place. A non-mutating call on a
/// struct kept in a class property copies the whole struct (a retain and a release of each of
/// its parts) whenever the method calls code the optimizer cannot see through.
///
/// Confined to the object's context executor, as the object is.
@usableFromInline
package struct ObjectState {
    /// Current values, one per property slot (attributes in stored form; foreign keys of to-one
    /// relationships as the destination's primary key). Changed through ``setValue(_:at:)``.
    @usableFromInline package private(set) var values: [StoredValue]
    /// Lifecycle flags. (Next to `values`, with the cached slot filling the word: an accessor
    /// reads both, in the object's first cache line.)
    @usableFromInline package private(set) var flags: ObjectFlags = []
    /// The slot of `toOneCache` (-1: none).
    private var toOneCacheSlot: Int32 = -1
    /// The committed values of the slots changed since the last load or save (the sparse
    /// committed snapshot, see the type's rules); nil: no snapshot.
    @usableFromInline package private(set) var originals: [SlotValue]?
    /// Relationship state by slot (to-one overrides and to-many contents); nil until used.
    package private(set) var relations: [Int: RelationState]?
    /// To-one destinations at load or last save, aligned with `entity.foreignKeyRelationships`,
    /// when they were set explicitly (saves, snapshots of a parent context); nil when they are
    /// the ones the committed foreign-key slots name (objects read from a store row), which
    /// ``committedToOneID(_:objectID:)`` derives on demand: no array per fetched row.
    package private(set) var committedToOne: [ObjectID?]?
    /// The row version the object was loaded at (0: never saved).
    package private(set) var version: Int64 = 0
    /// The destination last resolved for the foreign-key relationship at `toOneCacheSlot`,
    /// valid while the context's registrations are unchanged (`toOneCacheGeneration`), the
    /// committed destinations are unchanged (cleared when they are set) and the relationship
    /// has no in-memory state. Saves an identity-map lookup per read of a to-one relationship.
    ///
    /// Unowned(unsafe), so it adds no retain cycle: while the generation matches, the
    /// destination is in the identity map, which keeps it alive; it is read only after the
    /// generation (and the context's presence) is checked.
    private unowned(unsafe) var toOneCache: ManagedObject?
    private var toOneCacheGeneration: UInt64 = 0

    /// The state of a new object: `values` (its entity's defaults), no snapshot, no flags.
    package init(values: [StoredValue]) {
        self.values = values
    }

    // MARK: Reading

    /// Whether the object has a committed snapshot (it was loaded or saved).
    @inline(__always)
    package var hasSnapshot: Bool { originals != nil }

    /// The committed values in full (nil without a snapshot).
    package mutating func committedValues() -> [StoredValue]? {
        guard let originals else { return nil }
        return values.restoring(originals)
    }

    /// The committed value at `slot` (nil without a snapshot).
    @inline(__always)
    package mutating func committedValue(at slot: Int) -> StoredValue? {
        guard originals != nil, slot >= 0, slot < values.count else { return nil }
        if let original = originals?.first(where: { $0.slot == slot }) { return original.value }
        return values[slot]
    }

    /// Whether a stored attribute (`isStoredAttribute[slot]`) differs from the committed
    /// snapshot (false without one).
    @inline(__always)
    package mutating func hasAttributeChanges(isStoredAttribute isStored: [Bool]) -> Bool {
        guard let originals else { return false }
        return originals.contains { isStored[$0.slot] && values[$0.slot] != $0.value }
    }

    /// Appends, in slot order, the stored-attribute slots whose values differ from the
    /// committed snapshot (none without one).
    @inline(__always)
    package mutating func appendChangedSlots(isStoredAttribute isStored: [Bool], to slots: inout [Int]) {
        guard let originals else { return }
        let start = slots.count
        for original in originals where isStored[original.slot] && values[original.slot] != original.value {
            slots.append(original.slot)
        }
        if slots.count - start > 1 { slots[start...].sort() }
    }

    /// The state of the relationship at `slot`, if it has any in memory.
    @inline(__always)
    package mutating func relation(at slot: Int) -> RelationState? {
        relations?[slot]
    }

    /// The committed destination of a foreign-key relationship: the stored one when set,
    /// otherwise the object the committed foreign-key slot names, in the store of `objectID`
    /// (the object's ID, read only then).
    @inline(__always)
    package mutating func committedToOneID(_ r: RelationshipDescription, objectID: @autoclosure () -> ObjectID?) -> ObjectID? {
        let ordinal = r.fkOrdinal
        guard ordinal >= 0 else { return nil }
        if let stored = committedToOne { return ordinal < stored.count ? stored[ordinal] : nil }
        guard case .integer(let key)? = committedValue(at: r.slot), let destination = r.destinationEntity else { return nil }
        guard let id = objectID() else { return ObjectID(entity: destination, storeIdentifier: nil, primaryKey: key) }
        return id.inSameStore(entity: destination, primaryKey: key)
    }

    /// The current destination of a foreign-key relationship: the one set in memory, otherwise
    /// the committed one (see ``committedToOneID(_:objectID:)``).
    @inline(__always)
    package mutating func currentToOneID(_ r: RelationshipDescription, objectID: @autoclosure () -> ObjectID?) -> ObjectID? {
        if relations != nil, case .toOne(let o)? = relations?[r.slot] { return o?.objectID }
        return committedToOneID(r, objectID: objectID())
    }

    /// The destination cached for the foreign-key relationship at `slot`, when the cache is for
    /// that slot and the context's registrations are still at `generation`.
    @inline(__always)
    package mutating func cachedToOne(slot: Int, generation: UInt64) -> ManagedObject? {
        guard Int(toOneCacheSlot) == slot, toOneCacheGeneration == generation else { return nil }
        return toOneCache
    }

    // MARK: Loading

    /// Installs a row or snapshot loaded from the context's source: its values become the
    /// current ones and the committed ones (a snapshot listing no change), `toOne` the
    /// committed to-one destinations (nil: the ones its foreign keys name). The object is a
    /// fault with its values in memory when `asFault` (prefilled), else not a fault; a load
    /// failure ends. Relationship state is dropped unless `keepRelations` (filling a fault
    /// keeps the edits made while it was one).
    @inline(__always)
    package mutating func install(
        _ loaded: consuming [StoredValue], toOne: [ObjectID?]?, version: Int64, asFault: Bool, keepRelations: Bool
    ) {
        values = loaded
        if originals == nil && committedToOne == nil && relations == nil {
            // A new object (a fetch's): nothing to release in the fields replaced.
            originals = []
            if toOne != nil { committedToOne = toOne }
        } else {
            originals = []
            committedToOne = toOne
            if !keepRelations { relations = nil }
        }
        forgetCachedToOne()
        self.version = version
        if asFault {
            flags.remove(.loadFailed)
            flags.insert([.fault, .prefilled])
        } else {
            flags.remove([.fault, .prefilled, .loadFailed])
        }
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Makes a row read from the store the committed snapshot and `version` the object's,
    /// keeping the current values (a save conflict resolved: the object now builds on the
    /// stored row, and every value that differs from it is a change). `toOne` as in
    /// ``install(_:toOne:version:asFault:keepRelations:)``.
    package mutating func rebase(onto committed: [StoredValue], toOne: [ObjectID?]?, version: Int64) {
        var changed: [SlotValue] = []
        for slot in values.indices where slot < committed.count && values[slot] != committed[slot] {
            changed.append(SlotValue(slot: slot, value: committed[slot]))
        }
        originals = changed
        committedToOne = toOne
        forgetCachedToOne()
        self.version = version
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Realizes a prefilled fault: its values are in memory already.
    package mutating func realizePrefilled() {
        flags.remove([.fault, .prefilled])
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Makes a new object a fault whose row is not read yet.
    package mutating func beginFault() {
        flags = [.fault]
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Turns the object back into a fault (a refresh): its relationship state is dropped and
    /// the next access reads its row again.
    package mutating func turnIntoFault() {
        relations = nil
        flags.remove(.prefilled)
        flags.insert(.fault)
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Reading the object's row failed (not for want of a row): it becomes a fault with no
    /// data, its values `defaults` (nothing from an earlier load is presented as its row).
    package mutating func failLoad(defaults: [StoredValue]) {
        flags.remove([.prefilled, .inaccessible])
        flags.insert([.fault, .loadFailed])
        values = defaults
        originals = nil
        committedToOne = nil
        forgetCachedToOne()
        version = 0
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Forgets a load failure (the object's edits are discarded or it left the context): its
    /// values go back to `defaults`; it stays a fault.
    package mutating func endLoadFailure(defaults: [StoredValue]) {
        guard flags.contains(.loadFailed) else { return }
        flags.remove(.loadFailed)
        values = defaults
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Drops the edits made to an object whose data could not be loaded: its values go back to
    /// `defaults`. The object has no snapshot.
    package mutating func discardUnloadedEdits(defaults: [StoredValue]) {
        assert(originals == nil, "An object whose data could not be loaded has no committed snapshot.")
        values = defaults
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Reading the object's row found none: its data is gone.
    package mutating func markRowGone() {
        flags.remove([.fault, .loadFailed])
        flags.insert(.inaccessible)
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// A row found gone exists after all (saved since: its permanent ID was handed out before
    /// its save): the object is a fault whose row is read again.
    package mutating func markRowBack() {
        flags.remove(.inaccessible)
        flags.insert(.fault)
        #if DEBUG
        _checkInvariants()
        #endif
    }

    // MARK: Changing

    /// Sets the value at `slot`. On the first change of a slot since the last load or save,
    /// the snapshot keeps the slot's committed value.
    @usableFromInline
    package mutating func setValue(_ value: StoredValue, at slot: Int) {
        if originals?.isEmpty == true {
            // The first change since the load or save: a list of one, made at its size (growing
            // the empty list would go through the general reallocation path).
            originals = [SlotValue(slot: slot, value: values[slot])]
        } else if originals != nil, originals?.contains(where: { $0.slot == slot }) == false {
            originals?.append(SlotValue(slot: slot, value: values[slot]))
        }
        values[slot] = value
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Sets (or with nil removes) the in-memory state of the relationship at `slot`.
    package mutating func setRelation(_ state: RelationState?, at slot: Int) {
        if let state {
            if relations == nil {
                relations = [slot: state]
            } else {
                relations?[slot] = state
            }
        } else if relations != nil {
            relations?[slot] = nil
            if relations?.isEmpty == true { relations = nil }
        }
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Drops every relationship's in-memory state.
    package mutating func dropRelations() {
        relations = nil
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Remembers the resolved destination of a foreign-key relationship (see `toOneCache`).
    package mutating func cacheToOne(_ destination: ManagedObject, slot: Int, generation: UInt64) {
        toOneCache = destination
        toOneCacheSlot = Int32(truncatingIfNeeded: slot)
        toOneCacheGeneration = generation
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Forgets the cached to-one destination.
    package mutating func forgetCachedToOne() {
        toOneCache = nil
        toOneCacheSlot = -1
    }

    // MARK: Lifecycle

    /// Marks the object inserted in a context (row version 0); with `newValues`, a new object
    /// takes them (an object a child context pushed).
    package mutating func beginInserted(values newValues: [StoredValue]? = nil) {
        flags = [.inserted]
        version = 0
        if let newValues {
            assert(originals == nil, "Only a new object takes inserted values.")
            values = newValues
        }
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// The object is inserted no more (saved, pushed into a parent, or matched to a stored
    /// row); `version`, when given, is the version its row was written at.
    package mutating func endInserted(version: Int64? = nil) {
        flags.remove(.inserted)
        if let version { self.version = version }
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Marks the object deleted (an inserted one is inserted no more).
    package mutating func markDeleted() {
        flags.remove(.inserted)
        flags.insert(.deleted)
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Marks a deleted object not deleted again.
    package mutating func unmarkDeleted() {
        flags.remove(.deleted)
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// The object is no longer tracked by its context (a rolled-back insert, a saved delete):
    /// no lifecycle flag is left.
    package mutating func clearFlags() {
        flags = []
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// The object's row is gone or taken over by another object: only `.inaccessible` is left.
    package mutating func markForgotten() {
        flags = [.inaccessible]
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Lists the object for the next ObjectsDidChange; false when it was listed already.
    @inline(__always)
    package mutating func markPendingUpdate() -> Bool {
        if flags.contains(.pendingUpdate) { return false }
        flags.insert(.pendingUpdate)
        #if DEBUG
        _checkInvariants()
        #endif
        return true
    }

    /// The object is no longer listed for the next ObjectsDidChange.
    @inline(__always)
    package mutating func clearPendingUpdate() {
        flags.remove(.pendingUpdate)
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// The object's row was written at `version`.
    package mutating func noteWritten(version: Int64) {
        self.version = version
        #if DEBUG
        _checkInvariants()
        #endif
    }

    // MARK: Saving

    /// After a save: the current values become the committed snapshot, the current to-one
    /// destinations the committed ones (foreign-key slots then hold their keys), and loaded
    /// to-many contents their committed contents (deleted members leave them); to-one
    /// overrides are dropped (they are committed now), and so are the edits of to-many
    /// relationships that are still faults (they are saved). `foreignKeys` are the entity's
    /// foreign-key relationships, `objectID` the object's ID.
    package mutating func commit(foreignKeys: [RelationshipDescription], objectID: @autoclosure () -> ObjectID?) {
        if !foreignKeys.isEmpty && !foreignKeysNameCommittedDestinations(foreignKeys, objectID: objectID()) {
            var toOne: [ObjectID?] = []
            // Foreign-key slots that must change to hold the stored keys (row snapshots carry
            // them). Written after the loop: a write inside it would make the values unique
            // before the loop, copying them even when no key changed (the save's change set
            // still holds them).
            var keys: [SlotValue] = []
            for (n, r) in foreignKeys.enumerated() {
                let id = currentToOneID(r, objectID: objectID())
                if id != nil && toOne.isEmpty { toOne = Array(repeating: nil, count: foreignKeys.count) }
                if id != nil { toOne[n] = id }
                let stored: StoredValue = id.map { $0.isTemporaryID ? .null : .integer($0.primaryKey) } ?? .null
                if values[r.slot] != stored { keys.append(SlotValue(slot: r.slot, value: stored)) }
            }
            // Straight to the values: the snapshot is replaced just below anyway.
            for key in keys { values[key.slot] = key.value }
            // All nil: an empty array (no allocation); readers treat a missing entry as nil.
            committedToOne = toOne
            forgetCachedToOne()
        }
        originals = []
        if let current = relations {
            var kept: [Int: RelationState] = [:]
            for (slot, state) in current {
                guard case .toMany(let m) = state else { continue }  // to-one: committed now
                if let objects = m.objects {
                    let remaining = objects.filter { !$0.isDeleted }
                    m.committed = remaining.map(\.objectID)
                    m.objects = remaining
                } else {
                    // Still a fault: forget the pending edits, they are saved now.
                    m.pendingAdds = []
                    m.pendingRemoves = []
                }
                kept[slot] = state
            }
            relations = kept.isEmpty ? nil : kept
        }
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Whether committing would leave the to-one state as it is: the object has a snapshot, no
    /// relationship state and derived committed destinations, and each foreign-key slot is
    /// unchanged and holds a key (or NULL) that names the destination it derives (so
    /// ``commit(foreignKeys:objectID:)`` would neither rewrite a slot nor change a destination,
    /// and needs no pass over them).
    @inline(__always)
    private mutating func foreignKeysNameCommittedDestinations(
        _ foreignKeys: [RelationshipDescription], objectID: @autoclosure () -> ObjectID?
    ) -> Bool {
        guard relations == nil, committedToOne == nil, let changed = originals else { return false }
        for r in foreignKeys {
            guard r.slot < values.count, !changed.contains(where: { $0.slot == r.slot }) else { return false }
            switch values[r.slot] {
            case .null: continue
            case .integer:
                // Derived from a stored key: a permanent ID in the object's store.
                guard r.fkOrdinal >= 0, r.destinationEntity != nil, let id = objectID(), !id.isTemporaryID else { return false }
            default: return false
            }
        }
        return true
    }

    /// Discards the unsaved changes: the values go back to the committed snapshot (when there
    /// is one) and the relationship state is dropped.
    package mutating func rollBack() {
        if let changed = originals, !changed.isEmpty {
            for original in changed { values[original.slot] = original.value }
            originals = []
        }
        relations = nil
        #if DEBUG
        _checkInvariants()
        #endif
    }

    /// Replaces temporary IDs by permanent ones (`map`) in the committed destinations.
    package mutating func remapCommittedIDs(_ map: [ObjectID: ObjectID]) {
        // Derived destinations (nil storage) come from stored keys: never temporary.
        if let toOne = committedToOne, toOne.contains(where: { $0.map { map[$0] != nil } ?? false }) {
            committedToOne = toOne.map { id in id.flatMap { map[$0] } ?? id }
            forgetCachedToOne()
        }
        guard let relations else { return }
        for case .toMany(let m) in relations.values {
            m.committed = m.committed?.map { map[$0] ?? $0 }
        }
    }

    // MARK: Checking

    /// Stops (debug builds) when a rule of the type is broken.
    @usableFromInline
    package func _checkInvariants() {
        if let originals {
            for (i, original) in originals.enumerated() {
                assert(original.slot >= 0 && original.slot < values.count, "A committed value outside the object's slots.")
                for earlier in originals[..<i] {
                    assert(earlier.slot != original.slot, "The sparse snapshot lists slot \(original.slot) twice.")
                }
            }
        }
        if flags.contains(.loadFailed) {
            assert(flags.contains(.fault), "An object whose data could not be loaded is a fault.")
            assert(originals == nil, "An object whose data could not be loaded has no committed snapshot.")
        }
        assert(!flags.contains(.prefilled) || flags.contains(.fault), "A prefilled object is a fault.")
        assert(!(flags.contains(.inserted) && flags.contains(.deleted)), "An object is not inserted and deleted at once.")
        assert(relations.map { !$0.isEmpty } ?? true, "Relationship state is nil or not empty.")
    }
}
