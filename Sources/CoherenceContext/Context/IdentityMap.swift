/// A context's identity map: its registered objects by ``ObjectID``, so that one row is one
/// object in a context.
///
/// An open-addressing hash table probed in steps of ``step`` buckets, whose 16-byte entries
/// hold an ID's 64-bit hash and the object (strongly: the map keeps its objects alive). The
/// ID itself is not stored: every object is registered under its current `_objectID`, which a
/// lookup compares when the hashes match. Compared with `[ObjectID: ManagedObject]` (48-byte buckets), the table is a
/// third of the size per bucket, so a fetch of 100,000 rows can register each object as it
/// reads its row: growing the table moves entries by their stored hashes, without rehashing
/// an ID or touching an object. Consecutive keys go to consecutive buckets (see ``hash(_:)``).
///
/// A value type with copy-on-write storage, like the dictionary it replaces: iterating
/// ``values`` while the map changes iterates the map as it was.
///
/// - Invariant: an object is stored under its current `_objectID` (``ManagedObjectContext/rekey(_:to:)``
///   removes it before its ID changes); checked in debug builds.
/// - Complexity: lookups, insertions and removals are O(1) on average; ``values`` is O(capacity).
package struct IdentityMap {
    struct Entry {
        var hash: UInt64
        /// Nil: an empty bucket. A retained reference otherwise.
        var object: RetainedReference<ManagedObject>?
    }

    /// The table: `mask + 1` (a power of two) entries, at most half of them used. It owns the
    /// entries and their objects; the map reads and writes them through the pointer it keeps
    /// next to it (see ``IdentityMap/entries``).
    final class Storage {
        let mask: Int
        let entries: UnsafeMutablePointer<Entry>
        /// False once ``moveEntries(from:)`` has moved the objects out: the references in the
        /// entries are no longer this table's to release.
        private var ownsObjects = true

        init(capacity: Int) {
            mask = capacity - 1
            entries = .allocate(capacity: capacity)
            entries.initialize(repeating: Entry(hash: 0, object: nil), count: capacity)
        }

        /// A copy: the same entries, each object retained once more.
        init(copying other: Storage) {
            mask = other.mask
            entries = .allocate(capacity: other.mask + 1)
            entries.initialize(from: other.entries, count: other.mask + 1)
            for i in 0...mask { _ = entries[i].object?.retainedAgain() }
        }

        deinit {
            if ownsObjects {
                for i in 0...mask { entries[i].object?.release() }
            }
            entries.deinitialize(count: mask + 1)
            entries.deallocate()
        }

        /// Moves every entry of `other` into this larger table, by their stored hashes, with the
        /// references they hold: `other` is left to be discarded (it no longer releases them,
        /// so freeing it does not walk its table again).
        func moveEntries(from other: Storage) {
            precondition(other.ownsObjects, "A table's entries moved twice.")
            for i in 0...other.mask {
                let e = other.entries[i]
                guard e.object != nil else { continue }
                var j = Int(truncatingIfNeeded: e.hash) & mask
                while entries[j].object != nil { j = (j &+ IdentityMap.step) & mask }
                entries[j] = e
            }
            other.ownsObjects = false
        }
    }

    /// The owner of the table (nil until the first insertion).
    private var storage: Storage?
    /// `storage`'s entries and mask, kept here so that a lookup or an insertion reads the table
    /// without loading (and reference counting) the storage object: two atomic operations per
    /// call saved, which a fetch pays per row. Valid while `storage` is; when `storage` is
    /// shared, only read through them.
    private var entries: UnsafeMutablePointer<Entry>?
    private var mask = 0
    /// The number of registered objects.
    private(set) var count = 0

    init() {}

    /// The hash of an ID: its key, its root entity and its store, mixed. Equal IDs (same key,
    /// store and entity hierarchy) have equal hashes.
    ///
    /// Keys are mixed in runs of 64: the rest of the key, the entity and the store pick the
    /// run; a key's low six bits, turned by six bits of the run's hash, pick its bucket within
    /// the run. (Unturned, keys 64 apart would all have the first bucket of a run as their
    /// home: a sixty-fourth of the buckets for all of them.) Consecutive keys (a fetch of a
    /// table in key order, the rows a save inserts) then go to consecutive buckets: 64 16-byte
    /// entries on one kilobyte of one memory page, which the processor reads ahead of the
    /// registrations. Mixed one by one, they scattered over the table: once the table outgrew
    /// the cache, each row's registration missed the cache and the address translation buffer.
    /// (Runs of eight still missed once per four rows: about 5 % of a fetch of 100,000 rows.)
    @inline(__always)
    static func hash(_ id: ObjectID) -> UInt64 {
        var rootIdentity = id.entity.rootIdentity
        if rootIdentity == 0 { rootIdentity = UInt(bitPattern: ObjectIdentifier(id.entity.rootEntity)) }  // not loaded
        let root = UInt64(rootIdentity)
        let key = id.primaryKey
        let run = UInt64(UInt(bitPattern: ObjectID.mix(key >> 6, seed: Int(truncatingIfNeeded: root ^ id.storeWord))))
        return run << 6 | ((UInt64(bitPattern: key) &+ run >> 58) & 63)
    }

    /// How far a probe moves from a taken bucket: one run and one bucket. A run whose home is
    /// taken by another run then lies in the next run's buckets (while those are free), still
    /// consecutive, instead of making every one of its keys walk past the other run (a step of
    /// one bucket would). The step is odd, so that a probe visits every bucket of the table (a
    /// power of two) before it comes back. Numbering bucket `b` as `b × step⁻¹` makes every
    /// probe sequence consecutive: the table is then linearly probed in that order.
    static let step = 65
    /// The inverse of ``step`` modulo 2⁶⁴ (`step &* stepInverse == 1`), and so modulo every
    /// table size: the number of steps from bucket `a` to bucket `b` is
    /// `((b &- a) &* stepInverse) & mask`.
    static let stepInverse = 0x0FC0_FC0F_C0FC_0FC1

    /// The number of probe steps from bucket `from` to bucket `to` in a table of `mask + 1`
    /// buckets.
    @inline(__always)
    static func steps(from: Int, to: Int, mask: Int) -> Int {
        ((to &- from) &* stepInverse) & mask
    }

    package var isEmpty: Bool { count == 0 }
    /// The most objects the table takes before it grows: half its buckets.
    private var maximumCount: Int { entries == nil ? 0 : (mask + 1) / 2 }

    /// The bucket of the table holding `id` (`found`), or the empty bucket where it would go.
    @inline(__always)
    private static func probe(
        _ entries: UnsafeMutablePointer<Entry>, mask: Int, for id: ObjectID,
        hash: UInt64
    ) -> (index: Int, found: Bool) {
        var i = Int(truncatingIfNeeded: hash) & mask
        while let o = entries[i].object {
            if entries[i].hash == hash && o.withObject({ $0._objectID == id }) { return (i, true) }
            i = (i &+ step) & mask
        }
        return (i, false)
    }

    /// The bucket holding `id`, or nil.
    @inline(__always)
    private func find(_ id: ObjectID, hash: UInt64) -> Int? {
        guard let entries else { return nil }
        let p = IdentityMap.probe(entries, mask: mask, for: id, hash: hash)
        return p.found ? p.index : nil
    }

    /// Makes the storage unique and able to take `extra` more objects.
    @inline(__always)
    private mutating func prepareForInsertion(_ extra: Int) {
        if count + extra <= maximumCount && isKnownUniquelyReferenced(&storage) { return }
        grow(to: count + extra)
    }

    /// The number of buckets (0 before the first insertion).
    package var capacity: Int { entries == nil ? 0 : mask + 1 }

    /// Gives back most of the table when it is less than an eighth full (after a fetch that
    /// reserved room for more rows than came): a table for `count` objects replaces it.
    /// - Complexity: O(capacity) when it shrinks.
    mutating func shrinkIfSparse() {
        guard capacity > 64, count * 8 < capacity else { return }
        install(movedTable(capacity: IdentityMap.tableCapacity(for: count)))
    }

    private mutating func grow(to minimumCount: Int) {
        let capacity = IdentityMap.tableCapacity(for: minimumCount)
        let unique = isKnownUniquelyReferenced(&storage)
        if let old = storage, capacity <= old.mask + 1 {
            // Large enough already: only shared.
            if unique { return }
            install(Storage(copying: old))
        } else {
            install(movedTable(capacity: capacity))
        }
    }

    /// The number of buckets of a table that takes `count` objects (a power of two, at least 16).
    private static func tableCapacity(for count: Int) -> Int {
        var capacity = 16
        while capacity / 2 < count { capacity <<= 1 }
        return capacity
    }

    /// A table of `capacity` buckets holding the map's entries: moved from its table when the
    /// map owns it alone, from a copy otherwise.
    private mutating func movedTable(capacity: Int) -> Storage {
        let unique = isKnownUniquelyReferenced(&storage)
        let new = Storage(capacity: capacity)
        if let old = storage { new.moveEntries(from: unique ? old : Storage(copying: old)) }
        return new
    }

    /// Makes `new` the map's table.
    private mutating func install(_ new: Storage) {
        entries = new.entries
        mask = new.mask
        storage = new
    }

    /// Makes room for `minimumCapacity` objects in all.
    mutating func reserveCapacity(_ minimumCapacity: Int) {
        if minimumCapacity <= maximumCount { return }
        grow(to: minimumCapacity)
    }

    /// The object registered under `id`; setting nil removes it.
    package subscript(id: ObjectID) -> ManagedObject? {
        get { object(for: id, hash: IdentityMap.hash(id)) }
        set {
            if let object = newValue { insert(object, for: id) } else { remove(id) }
        }
    }

    /// Registers `object` under `id` (its `_objectID`), replacing any object registered there.
    mutating func insert(_ object: ManagedObject, for id: ObjectID) {
        checkKey(object, id)
        let h = IdentityMap.hash(id)
        prepareForInsertion(1)
        guard let entries else { return }
        let p = IdentityMap.probe(entries, mask: mask, for: id, hash: h)
        if p.found, let old = entries[p.index].object {
            entries[p.index].object = RetainedReference(retaining: object)
            if !old.refers(to: object) {
                old.withObject { $0._leaveGroup() }  // no longer registered
            }
            old.release()
            return
        }
        entries[p.index] = Entry(hash: h, object: RetainedReference(retaining: object))
        count += 1
    }

    /// The object registered under `id`, whose ``hash(_:)`` is `hash` (computed once for a
    /// lookup and the insertion that may follow).
    @inline(__always)
    func object(for id: ObjectID, hash: UInt64) -> ManagedObject? {
        guard let entries, let i = find(id, hash: hash) else { return nil }
        return entries[i].object?.object
    }

    /// Registers `object` under `id` (its `_objectID`, whose hash is `hash`) unless an object is
    /// registered there already, in one probe. Returns nil when `object` was registered, else
    /// the object registered under `id` (the map keeps it registered). With `settingID` false,
    /// `object` does not have `id` yet: the caller sets `_objectID` to `id` when it was
    /// registered, before the map is used again (so the ID moves into the object instead of
    /// being copied).
    @inline(__always)
    mutating func insertIfAbsent(_ object: ManagedObject, for id: ObjectID, hash: UInt64, settingID: Bool = true) -> ManagedObject? {
        if settingID { checkKey(object, id) }
        prepareForInsertion(1)
        guard let entries else { return nil }
        let p = IdentityMap.probe(entries, mask: mask, for: id, hash: hash)
        if p.found, let existing = entries[p.index].object { return existing.object }
        entries[p.index] = Entry(hash: hash, object: RetainedReference(retaining: object))
        count += 1
        return nil
    }

    /// Removes the object registered under `id`, if any (backward-shift deletion: no tombstones).
    /// The object leaves its fetch group unless `leavingGroup` is false (it is registered again
    /// at once, under a new ID).
    @discardableResult
    mutating func remove(_ id: ObjectID, leavingGroup: Bool = true) -> ManagedObject? {
        let h = IdentityMap.hash(id)
        guard find(id, hash: h) != nil else { return nil }
        prepareForInsertion(0)
        guard let entries, var hole = find(id, hash: h), let removed = entries[hole].object else { return nil }
        entries[hole].object = nil
        count -= 1
        var i = (hole &+ IdentityMap.step) & mask
        while entries[i].object != nil {
            let home = Int(truncatingIfNeeded: entries[i].hash) & mask
            // The entry may move into the hole unless its home lies cyclically in (hole, i]
            // along the probe sequence (distances counted in steps).
            let distanceToHome = IdentityMap.steps(from: home, to: i, mask: mask)
            let distanceToHole = IdentityMap.steps(from: hole, to: i, mask: mask)
            if distanceToHome >= distanceToHole {
                entries[hole] = entries[i]
                entries[i].object = nil
                hole = i
            }
            i = (i &+ IdentityMap.step) & mask
        }
        let object = removed.takeObject()
        if leavingGroup { object._leaveGroup() }  // no longer registered (see `FetchGroup`)
        return object
    }

    /// Every registered object, in no particular order.
    var values: Values { Values(storage: storage, count: count) }

    /// The registered objects: a snapshot of the map (later changes copy the map instead).
    struct Values: Sequence {
        fileprivate let storage: Storage?
        fileprivate let count: Int

        struct Iterator: IteratorProtocol {
            fileprivate let storage: Storage?
            fileprivate var index = 0
            mutating func next() -> ManagedObject? {
                guard let s = storage else { return nil }
                while index <= s.mask {
                    defer { index += 1 }
                    if let o = s.entries[index].object { return o.object }
                }
                return nil
            }
        }

        func makeIterator() -> Iterator { Iterator(storage: storage) }
        var underestimatedCount: Int { count }
    }

    @inline(__always)
    private func checkKey(_ object: ManagedObject, _ id: ObjectID) {
        assert(object._objectID == id, "An object must be registered under its own ID.")
    }

    #if DEBUG
    /// The mean and the longest number of buckets a lookup of a registered object reads.
    package func _probeLengths() -> (mean: Double, longest: Int) {
        guard let s = storage, count > 0 else { return (0, 0) }
        var total = 0, longest = 0
        for i in 0...mask where s.entries[i].object != nil {
            let home = Int(truncatingIfNeeded: s.entries[i].hash) & mask
            let length = IdentityMap.steps(from: home, to: i, mask: mask) + 1
            total += length
            longest = max(longest, length)
        }
        return (Double(total) / Double(count), longest)
    }

    /// Checks the table: the count, every object under its own ID and found from its hash.
    package func _checkInvariants() {
        guard let s = storage else {
            precondition(entries == nil && count == 0, "A map without storage has entries.")
            return
        }
        precondition(entries == s.entries && mask == s.mask, "The map's view of its table is stale.")
        var n = 0
        for i in 0...mask {
            guard let o = s.entries[i].object?.object else { continue }
            n += 1
            guard let id = o._objectID else { preconditionFailure("A registered object has no ID.") }
            precondition(IdentityMap.hash(id) == s.entries[i].hash, "An entry's hash is not its object's.")
            precondition(find(id, hash: s.entries[i].hash) == i, "An entry cannot be found from its hash.")
        }
        precondition(n == count, "The count is wrong.")
    }
    #endif
}
