/// Objects keyed by identity that remember the order they were added in: the context's
/// candidates for "updated".
///
/// A save walks its updated objects several times (validation, change set, results, commit).
/// In the order the objects were changed, which is usually the order they were fetched in, those
/// walks go through memory in allocation order and the store's updates arrive sorted by key; in
/// a dictionary's hash order each walk jumps around memory, and the store must sort.
///
/// Removal leaves a hole (a shared placeholder object) that ``values`` skips and the next
/// growth compacts. Without holes, ``values`` is the storage itself: no copy, no retain per
/// object.
struct OrderedObjects: ExpressibleByDictionaryLiteral {
    private var positions: [IdentityKey: Int] = [:]
    private var slots: [ManagedObject] = []
    /// What a removed object's place holds.
    private static var hole: ManagedObject { OrderedObjectsHole.object }

    init() {}

    /// An empty collection (the only literal there is: `[:]`).
    init(dictionaryLiteral elements: (ObjectIdentifier, ManagedObject)...) {
        for (key, object) in elements { self[key] = object }
    }

    /// The number of objects.
    /// - Complexity: O(1).
    var count: Int { positions.count }
    var isEmpty: Bool { positions.isEmpty }

    /// The object with `key`; setting nil removes it, setting an object adds it at the end (an
    /// object already present keeps its place).
    /// - Complexity: O(1) amortized.
    subscript(key: ObjectIdentifier) -> ManagedObject? {  // key: `ObjectIdentifier(object)`
        get { positions[IdentityKey(key)].map { slots[$0] } }
        set {
            if let object = newValue {
                let key = IdentityKey(key)
                if let i = positions[key] {
                    slots[i] = object
                } else {
                    if slots.count == slots.capacity && slots.count > 2 * positions.count { compact() }
                    positions[key] = slots.count
                    slots.append(object)
                }
            } else if let i = positions.removeValue(forKey: IdentityKey(key)) {
                slots[i] = Self.hole
                if positions.isEmpty { slots.removeAll(keepingCapacity: true) }
            }
        }
    }

    /// The objects in the order they were added.
    /// - Complexity: O(*n*) where *n* counts holes left by removals too.
    var values: [ManagedObject] {
        if slots.count == positions.count { return slots }
        let hole = Self.hole
        return slots.filter { $0 !== hole }
    }

    mutating func reserveCapacity(_ n: Int) {
        positions.reserveCapacity(n)
        slots.reserveCapacity(n)
    }

    /// Drops the holes (positions are renumbered).
    private mutating func compact() {
        var packed: [ManagedObject] = []
        packed.reserveCapacity(Swift.max(positions.count * 2, 16))
        let hole = Self.hole
        for object in slots where object !== hole {
            positions[IdentityKey(ObjectIdentifier(object))] = packed.count
            packed.append(object)
        }
        slots = packed
    }

    #if DEBUG
    /// Every position names a slot holding the object with that key, and every object is named.
    func _checkInvariants() {
        var live = 0
        for (i, object) in slots.enumerated() where object !== Self.hole {
            live += 1
            assert(positions[IdentityKey(ObjectIdentifier(object))] == i, "OrderedObjects: position of an object is wrong")
        }
        assert(live == positions.count, "OrderedObjects: \(live) objects for \(positions.count) keys")
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

/// An object identity as a dictionary key, hashed like ``ObjectID`` (a SplitMix64 finalizer of
/// the address instead of a full `Hasher` round).
struct IdentityKey: Hashable {
    let id: ObjectIdentifier
    @inline(__always) init(_ id: ObjectIdentifier) { self.id = id }
    func hash(into hasher: inout Hasher) { hasher.combine(id) }
    func _rawHashValue(seed: Int) -> Int {
        ObjectID.mix(Int64(Int(bitPattern: UInt(bitPattern: id))), seed: seed)
    }
}
