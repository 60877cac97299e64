import Synchronization

/// Objects that remember the order they were added in: the context's candidates for
/// "updated".
///
/// A save walks its updated objects several times (validation, change set, results, commit).
/// In the order the objects were changed, which is usually the order they were fetched in, those
/// walks go through memory in allocation order and the store's updates arrive sorted by key; in
/// a dictionary's hash order each walk jumps around memory, and the store must sort.
///
/// Each object records its own place (`_candidatePosition`) under this collection's *epoch*, a
/// number no other collection (and no earlier state of this one once emptied) uses: membership
/// is two loads and a comparison, with no hashing. An object whose epoch is stale is simply not
/// a member. Removal leaves a hole (a shared placeholder object) that ``values`` skips and the
/// next growth compacts. Without holes, ``values`` is the storage itself.
///
/// One collection per context, confined to its executor; a copy must not be kept and changed
/// apart from the original (the objects' records would describe only one of them).
package struct OrderedObjects: ExpressibleByDictionaryLiteral {
    private static let epochs = Atomic<UInt32>(0)
    private static func nextEpoch() -> UInt32 {
        var e = epochs.add(1, ordering: .relaxed).newValue
        if e == 0 { e = epochs.add(1, ordering: .relaxed).newValue }  // 0 means "never a member"
        return e
    }

    private var epoch: UInt32 = OrderedObjects.nextEpoch()
    private var slots: [ManagedObject] = []
    /// The number of objects.
    private(set) var count = 0
    /// What a removed object's place holds.
    private static var hole: ManagedObject { OrderedObjectsHole.object }

    init() {}

    /// A collection with these objects (keys are ignored: an object is its own key).
    package init(dictionaryLiteral elements: (ObjectIdentifier, ManagedObject)...) {
        for (_, object) in elements { insert(object) }
    }

    package var isEmpty: Bool { count == 0 }

    /// Whether `object` is in the collection.
    /// - Complexity: O(1), no hashing.
    @inline(__always)
    package func contains(_ object: ManagedObject) -> Bool {
        guard object._candidateEpoch == epoch else { return false }
        let i = Int(object._candidatePosition)
        return i < slots.count && slots[i] === object
    }

    /// Adds `object` at the end (an object already present keeps its place).
    /// - Complexity: O(1) amortized.
    package mutating func insert(_ object: ManagedObject) {
        if contains(object) { return }
        if slots.count == slots.capacity && slots.count > 2 * count { compact() }
        object._candidateEpoch = epoch
        object._candidatePosition = UInt32(truncatingIfNeeded: slots.count)
        slots.append(object)
        count += 1
    }

    /// Removes `object` if present.
    /// - Complexity: O(1).
    package mutating func remove(_ object: ManagedObject) {
        guard contains(object) else { return }
        slots[Int(object._candidatePosition)] = Self.hole
        object._candidateEpoch = 0
        count -= 1
        if count == 0 {
            slots.removeAll(keepingCapacity: true)
            epoch = Self.nextEpoch()
        }
    }

    /// The objects in the order they were added.
    /// - Complexity: O(1) without holes; otherwise O(*n*) where *n* counts the holes too.
    package var values: [ManagedObject] {
        if slots.count == count { return slots }
        let hole = Self.hole
        return slots.filter { $0 !== hole }
    }

    mutating func reserveCapacity(_ n: Int) {
        slots.reserveCapacity(n)
    }

    /// Drops the holes (positions are renumbered).
    private mutating func compact() {
        var packed: [ManagedObject] = []
        packed.reserveCapacity(Swift.max(count * 2, 16))
        let hole = Self.hole
        for object in slots where object !== hole {
            object._candidatePosition = UInt32(truncatingIfNeeded: packed.count)
            packed.append(object)
        }
        slots = packed
    }

    #if DEBUG
    /// Every object in the storage records its place under this epoch, and the count is right.
    package func _checkInvariants() {
        var live = 0
        for (i, object) in slots.enumerated() where object !== Self.hole {
            live += 1
            assert(
                object._candidateEpoch == epoch && Int(object._candidatePosition) == i,
                "OrderedObjects: an object does not record its place")
        }
        assert(live == count, "OrderedObjects: \(live) objects for a count of \(count)")
    }
    #endif
}

/// The placeholder for removed objects: never registered, read or changed, only compared by
/// identity.
private enum OrderedObjectsHole {
    // nonisolated(unsafe): an immutable object that no code reads or changes; it is only
    // compared by identity, from any thread.
    nonisolated(unsafe) static let object = ManagedObject(entity: ModelReflection.placeholderEntity)
}

extension ManagedObject {
    /// Whether two lists hold the same objects in the same order.
    /// - Complexity: O(*n*) pointer comparisons, no reference counting.
    static func identical(_ a: [ManagedObject], _ b: [ManagedObject]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBufferPointer { x in
            b.withUnsafeBufferPointer { y in
                for i in 0..<x.count where x[i] !== y[i] { return false }
                return true
            }
        }
    }
}
