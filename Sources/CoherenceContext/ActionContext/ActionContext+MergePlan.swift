import Foundation

/// The incoming objects of a merge, validated and converted to stored values, kept flat (one
/// array of keys, one of slots and values) rather than as an array per object.
struct MergeInput {
    /// The number of incoming objects.
    let count: Int
    /// The uniqueness attributes.
    let keyCount: Int
    /// Key values, `keyCount` per object.
    private var keyValues: [StoredValue] = []
    /// The single key as integers, when the entity has one integer-valued uniqueness attribute
    /// (sorting and comparing them needs no `StoredValue`s).
    private(set) var integerKeys: [Int64]?
    /// Slots and values of every object (ignored attributes left out), object after object.
    private var slots: [Int] = []
    private var values: [StoredValue] = []
    /// Where each object's values end in `slots` / `values`.
    private var ends: [Int] = []

    /// Converts `objects`; throws for unknown value types and missing keys (nothing is changed).
    init<Value>(_ objects: [[String: Value]], entity: EntityDescription, keys: [AttributeDescription], ignoredSlots: Set<Int>) throws {
        count = objects.count
        keyCount = keys.count
        keyValues.reserveCapacity(objects.count * keys.count)
        ends.reserveCapacity(objects.count)
        let width = objects.first?.count ?? 0
        slots.reserveCapacity(objects.count * width)
        values.reserveCapacity(objects.count * width)
        var ignored = [Bool](repeating: false, count: entity.properties.count)
        for slot in ignoredSlots where slot < ignored.count { ignored[slot] = true }
        var keyIndex = [Int](repeating: -1, count: entity.properties.count)
        for (i, k) in keys.enumerated() where k.slot < keyIndex.count { keyIndex[k.slot] = i }
        var key = [StoredValue](repeating: .null, count: keys.count)
        var integers: [Int64]? = keys.count == 1 ? [] : nil
        integers?.reserveCapacity(objects.count)
        // Names are matched against the entity's attribute names in order (cheaper than hashing
        // them for the usual handful of attributes), by dictionary past that.
        let attributes = entity.attributes
        let names = attributes.map(\.name)
        let scanned = min(names.count, 16)
        for (index, object) in objects.enumerated() {
            for k in key.indices { key[k] = .null }
            for (name, raw) in object {
                var a = 0
                while a < scanned && names[a] != name { a += 1 }
                let found = a < scanned ? attributes[a] : (scanned < names.count ? entity.attributesByName[name] : nil)
                guard let attribute = found else { continue }  // relationships and extra keys are not merged
                guard let stored = ManagedObject.mergeValue(raw, for: attribute) else {
                    throw ActionError(
                        .invalidValue,
                        "Object \(index) of '\(entity.name)': '\(attribute.name)' has a value of type \(type(of: raw as Any)), which is not a \(attribute.type)."
                    )
                }
                let slot = attribute.slot
                if keyIndex[slot] >= 0 { key[keyIndex[slot]] = stored }
                if !ignored[slot] {
                    slots.append(slot)
                    values.append(stored)
                }
            }
            for (k, attribute) in keys.enumerated() {
                guard !key[k].isNull else {
                    throw ActionError(
                        .invalidValue, "Object \(index) of '\(entity.name)' has no value for the uniqueness attribute '\(attribute.name)'.")
                }
                keyValues.append(key[k])
            }
            if integers != nil {
                if case .integer(let i) = key[0] { integers?.append(i) } else { integers = nil }
            }
            ends.append(values.count)
        }
        integerKeys = integers
    }

    /// The key of object `i`.
    func key(of i: Int) -> ArraySlice<StoredValue> {
        keyValues[(i * keyCount)..<((i + 1) * keyCount)]
    }

    /// The slots and values of object `i`.
    func values(of i: Int) -> Zip2Sequence<ArraySlice<Int>, ArraySlice<StoredValue>> {
        let range = (i == 0 ? 0 : ends[i - 1])..<ends[i]
        return zip(slots[range], values[range])
    }
}

/// The stored objects taking part in a merge: fetched rows (no object made for them yet), or
/// registered objects (with their current values).
struct MergeStored {
    /// Current values by slot, per stored object.
    private(set) var values: [[StoredValue]]
    /// The registered object standing for a row, if any.
    private(set) var objects: [ManagedObject?]
    private var source: Source

    private enum Source {
        case rows([(id: ObjectID, row: StoreRow)])
        case snapshots([ObjectSnapshot])
        case objects
    }

    init(rows: [(id: ObjectID, row: StoreRow)]) {
        values = rows.map(\.row.values)
        objects = [ManagedObject?](repeating: nil, count: rows.count)
        source = .rows(rows)
    }

    init(snapshots: [ObjectSnapshot]) {
        values = snapshots.map(\.values)
        objects = [ManagedObject?](repeating: nil, count: snapshots.count)
        source = .snapshots(snapshots)
    }

    init(objects: [ManagedObject]) {
        values = objects.map(\._state.values)
        self.objects = objects
        source = .objects
    }

    var count: Int { values.count }

    /// The ID of stored object `i`.
    func id(_ i: Int) -> ObjectID? {
        switch source {
        case .rows(let rows): return rows[i].id
        case .snapshots(let snapshots): return snapshots[i].id
        case .objects: return objects[i]?.objectID
        }
    }

    /// The version of fetched row `i` (nil when the stored objects came as objects).
    func version(_ i: Int) -> Int64? {
        switch source {
        case .rows(let rows): return rows[i].row.version
        case .snapshots(let snapshots): return snapshots[i].version
        case .objects: return nil
        }
    }

    /// A snapshot of fetched row `i` (nil when the stored objects came as objects).
    func snapshot(_ i: Int) -> ObjectSnapshot? {
        switch source {
        case .rows(let rows): return ObjectSnapshot(row: rows[i].row, id: rows[i].id)
        case .snapshots(let snapshots): return snapshots[i]
        case .objects: return nil
        }
    }

    /// Makes registered object `o` stand for row `i`.
    mutating func use(_ o: ManagedObject, at i: Int) {
        objects[i] = o
        values[i] = o._state.values
    }
}

/// What a merge does, worked out from keys and values alone: incoming and stored objects are
/// sorted by key and walked together (O(n log n)). Operations are in key order.
struct MergePlan {
    enum Operation {
        /// Insert one object from the incoming objects `incomingOrder[range]` (duplicates of one
        /// key, in input order: later ones win).
        case insert(Range<Int>)
        /// Update a stored object (its index in ``MergeStored``) with the incoming objects
        /// `incomingOrder[range]`; only planned when that changes a value.
        case update(Int, Range<Int>)
        /// Delete a stored object (its index in ``MergeStored``): no incoming object has its key.
        case delete(Int)
    }

    /// Incoming object indices sorted by key (input order among equal keys).
    private(set) var incomingOrder: [Int] = []
    private(set) var operations: [Operation] = []
    /// How many operations of each kind.
    private(set) var inserts = 0, updates = 0, deletes = 0

    init(incoming: MergeInput, stored: MergeStored, keys: [AttributeDescription]) {
        if let inKeys = incoming.integerKeys, let slot = keys.first?.slot, let stKeys = Self.integerKeys(stored, slot: slot) {
            // (key, index) pairs sort without a comparison closure; the index keeps input order
            // among equal keys.
            func order(_ keys: [Int64]) -> [Int] {
                var pairs = keys.enumerated().map { ($1, $0) }
                pairs.sort { $0 < $1 }
                return pairs.map(\.1)
            }
            build(inKeys, stKeys, order(inKeys), order(stKeys), incoming: incoming, stored: stored) { a, b in a < b ? -1 : (a == b ? 0 : 1)
            }
        } else {
            let inKeys = (0..<incoming.count).map { Array(incoming.key(of: $0)) }
            let stKeys = stored.values.map { v in keys.map { v[$0.slot] } }
            func order(_ values: [[StoredValue]]) -> [Int] {
                var order = Array(values.indices)
                order.sort { a, b in
                    let c = ActionContext.compareKeys(values[a], values[b], keys)
                    return c != 0 ? c < 0 : a < b
                }
                return order
            }
            build(inKeys, stKeys, order(inKeys), order(stKeys), incoming: incoming, stored: stored) { a, b in
                ActionContext.compareKeys(a, b, keys)
            }
        }
    }

    /// The stored objects' single key as integers, or nil when one is not an integer.
    private static func integerKeys(_ stored: MergeStored, slot: Int) -> [Int64]? {
        var result: [Int64] = []
        result.reserveCapacity(stored.count)
        for v in stored.values {
            guard case .integer(let i) = v[slot] else { return nil }
            result.append(i)
        }
        return result
    }

    /// Walks incoming and stored objects in key order (`inOrder` / `stOrder`: indices sorted by
    /// `compare`, input order among equal keys).
    private mutating func build<K>(
        _ inKeys: [K], _ stKeys: [K], _ inOrder: [Int], _ stOrder: [Int], incoming: MergeInput,
        stored: MergeStored, compare: (K, K) -> Int
    ) {
        incomingOrder = inOrder
        operations.reserveCapacity(max(inOrder.count, stOrder.count))
        let n = inOrder.count, m = stOrder.count
        var i = 0, s = 0
        while i < n || s < m {
            let c: Int
            if i == n { c = 1 } else if s == m { c = -1 } else { c = compare(inKeys[inOrder[i]], stKeys[stOrder[s]]) }
            if c > 0 {
                operations.append(.delete(stOrder[s]))
                deletes += 1
                s += 1
                continue
            }
            // The incoming objects with this key.
            var j = i + 1
            while j < n, compare(inKeys[inOrder[j]], inKeys[inOrder[i]]) == 0 { j += 1 }
            if c < 0 {
                operations.append(.insert(i..<j))
                inserts += 1
            } else {
                let target = stOrder[s]
                if changes(stored.values[target], i..<j, incoming) {
                    operations.append(.update(target, i..<j))
                    updates += 1
                }
                s += 1
            }
            i = j
        }
    }

    /// Whether applying incoming objects `incomingOrder[range]` to `current` changes a value.
    private func changes(_ current: [StoredValue], _ range: Range<Int>, _ incoming: MergeInput) -> Bool {
        if range.count == 1 {
            for (slot, v) in incoming.values(of: incomingOrder[range.lowerBound]) where current[slot] != v { return true }
            return false
        }
        var result = current
        for position in range {
            for (slot, v) in incoming.values(of: incomingOrder[position]) { result[slot] = v }
        }
        return result != current
    }
}
