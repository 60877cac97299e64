import Foundation

/// The binary form of a transaction's changes (one blob per transaction: one row per save keeps
/// history cheap to write, whatever the number of objects).
///
/// ```
/// format     1 byte (1)
/// entities   count, then each name            (varint, then varint length + UTF-8)
/// properties count, then each name
/// changes    count, then each change:
///   varint   entity index << 2 | type         (0 insert, 1 update, 2 delete)
///   varint   primary key (as UInt64)
///   update:  count + property indexes; count + (property index, old value, new value)
///   delete:  count + (property index, value)
/// value      1 byte tag: 0 null, 1 integer (zigzag varint), 2 real (8 bytes, little-endian
///            bit pattern), 3 text, 4 blob (varint length + bytes)
/// ```
///
/// Names, not slots, are written: they stay meaningful when a later model version moves slots.
/// Decoding checks every length and index and reports a damaged blob as `.corruptRow`.
package enum HistoryCoding {
    static let format: UInt8 = 1
    /// Up to this many entities, an encoding finds an entity's index by a linear search.
    static let linearSearchLimit = 8

    // MARK: Encoding

    /// The names of the entities the changes touch, and the encoded changes.
    package static func encode(_ changes: [HistoryChangeRecord]) -> (entities: [String], bytes: [UInt8]) {
        var body = ByteWriter()
        body.bytes.reserveCapacity(changes.count * 6 + 16)
        var entityNames: [String] = []
        // The entities by name index, looked up by a linear search while they are few (most
        // transactions touch one or two; no dictionary is made for them), else by `entityIndex`.
        var entityKeys: [ObjectIdentifier] = []
        var entityIndex: [ObjectIdentifier: Int] = [:]
        var propertyNames: [String] = []
        var propertyIndex: [String: Int] = [:]
        // (Per entity: the name index of each slot, made on first use.)
        var slotNames: [ObjectIdentifier: [Int]] = [:]
        var lastEntity: ObjectIdentifier?
        var lastIndex = 0
        var lastSlotNames: [Int] = []
        var lastSlots: [Int] = []
        var lastSlotsEntity: ObjectIdentifier?
        var lastSlotsBytes: [UInt8] = []

        func nameIndex(_ slot: Int, _ entity: EntityDescription) -> Int {
            // (Made on first use: inserts name no property.)
            if lastSlotNames.isEmpty { lastSlotNames = [Int](repeating: -1, count: entity.properties.count) }
            if slot < lastSlotNames.count, lastSlotNames[slot] >= 0 { return lastSlotNames[slot] }
            let name = slot < entity.properties.count ? entity.properties[slot].name : "#\(slot)"
            let i: Int
            if let known = propertyIndex[name] {
                i = known
            } else {
                i = propertyNames.count
                propertyNames.append(name)
                propertyIndex[name] = i
            }
            if slot < lastSlotNames.count { lastSlotNames[slot] = i }
            return i
        }

        body.varint(UInt64(changes.count))
        for change in changes {
            let entity = change.objectID.entity
            let key = ObjectIdentifier(entity)
            if key != lastEntity {
                if let lastEntity, !lastSlotNames.isEmpty { slotNames[lastEntity] = lastSlotNames }
                let known = entityKeys.count <= Self.linearSearchLimit ? entityKeys.firstIndex(of: key) : entityIndex[key]
                if let known {
                    lastIndex = known
                } else {
                    lastIndex = entityNames.count
                    entityNames.append(entity.name)
                    entityKeys.append(key)
                    if entityKeys.count > Self.linearSearchLimit {
                        if entityIndex.isEmpty {
                            for (i, k) in entityKeys.enumerated() { entityIndex[k] = i }
                        } else {
                            entityIndex[key] = lastIndex
                        }
                    }
                }
                lastSlotNames = slotNames.isEmpty ? [] : slotNames[key] ?? []
                lastEntity = key
            }
            body.varint(UInt64(lastIndex) << 2 | UInt64(change.type.rawValue))
            body.varint(UInt64(bitPattern: change.objectID.primaryKey))
            switch change.type {
            case .insert:
                break
            case .update:
                // Updates of one entity usually change the same properties: their encoded list is
                // reused (a comparison of two short arrays instead of a lookup per property).
                if change.updatedSlots != lastSlots || key != lastSlotsEntity {
                    var list = ByteWriter()
                    list.varint(UInt64(change.updatedSlots.count))
                    for slot in change.updatedSlots { list.varint(UInt64(nameIndex(slot, entity))) }
                    lastSlots = change.updatedSlots
                    lastSlotsEntity = key
                    lastSlotsBytes = list.bytes
                }
                body.bytes.append(contentsOf: lastSlotsBytes)
                body.varint(UInt64(change.values.count))
                for v in change.values {
                    body.varint(UInt64(nameIndex(v.slot, entity)))
                    body.value(v.old)
                    body.value(v.new)
                }
            case .delete:
                body.varint(UInt64(change.tombstone.count))
                for v in change.tombstone {
                    body.varint(UInt64(nameIndex(v.slot, entity)))
                    body.value(v.value)
                }
            }
        }
        var out = ByteWriter()
        out.bytes.reserveCapacity(body.bytes.count + 64)
        out.bytes.append(format)
        out.varint(UInt64(entityNames.count))
        for n in entityNames { out.string(n) }
        out.varint(UInt64(propertyNames.count))
        for n in propertyNames { out.string(n) }
        out.bytes.append(contentsOf: body.bytes)
        return (entityNames, out.bytes)
    }

    // MARK: Decoding

    /// The changes of a transaction, as objects of `storeIdentifier` whose entities are looked up
    /// in `entities` by name. `only`: keep only changes of these entity names (nil: all).
    /// - Throws: `.corruptRow` when the bytes are damaged or name an entity the model lacks.
    package static func decode(
        _ bytes: UnsafeRawBufferPointer, entities: [String: EntityDescription], token: PersistentHistoryToken,
        only: Set<String>?, store: String
    ) throws(CoherenceError) -> [PersistentHistoryChange] {
        var r = ByteReader(bytes)
        func corrupt(_ what: String) -> CoherenceError {
            CoherenceError(
                .corruptRow, "History transaction \(token.transactionNumber) cannot be read: \(what).", store: store)
        }
        guard let format = r.byte(), format == Self.format else { throw corrupt("unknown format") }
        guard let entityCount = r.count() else { throw corrupt("truncated entity list") }
        var entityList: [EntityDescription?] = []
        var keep: [Bool] = []
        for _ in 0..<entityCount {
            guard let name = r.string() else { throw corrupt("truncated entity name") }
            guard let e = entities[name] else { throw corrupt("entity '\(name)' is not in the model") }
            entityList.append(e)
            keep.append(only?.contains(name) ?? true)
        }
        guard let propertyCount = r.count() else { throw corrupt("truncated property list") }
        var names: [String] = []
        for _ in 0..<propertyCount {
            guard let name = r.string() else { throw corrupt("truncated property name") }
            names.append(name)
        }
        func name(_ i: UInt64?) throws(CoherenceError) -> String {
            guard let i, i < UInt64(names.count) else { throw corrupt("bad property index") }
            return names[Int(i)]
        }
        guard let changeCount = r.count() else { throw corrupt("truncated change count") }
        var result: [PersistentHistoryChange] = []
        result.reserveCapacity(changeCount)
        for _ in 0..<changeCount {
            guard let head = r.varint(), let key = r.varint() else { throw corrupt("truncated change") }
            let e = Int(truncatingIfNeeded: head >> 2)
            guard head >> 2 < UInt64(entityList.count), let entity = entityList[e],
                let type = PersistentHistoryChangeType(rawValue: Int(head & 3))
            else { throw corrupt("bad change header") }
            var updated: Set<String>?
            var tombstone: [String: StoredValue]?
            var old: [String: StoredValue]?
            var new: [String: StoredValue]?
            switch type {
            case .insert:
                break
            case .update:
                guard let n = r.count() else { throw corrupt("truncated update") }
                var set = Set<String>(minimumCapacity: n)
                for _ in 0..<n { set.insert(try name(r.varint())) }
                updated = set
                guard let m = r.count() else { throw corrupt("truncated values") }
                if m > 0 {
                    var o: [String: StoredValue] = [:], w: [String: StoredValue] = [:]
                    for _ in 0..<m {
                        let property = try name(r.varint())
                        guard let before = r.value(), let after = r.value() else { throw corrupt("truncated value") }
                        o[property] = before
                        w[property] = after
                    }
                    old = o
                    new = w
                }
            case .delete:
                guard let n = r.count() else { throw corrupt("truncated tombstone") }
                if n > 0 {
                    var t: [String: StoredValue] = [:]
                    for _ in 0..<n {
                        let property = try name(r.varint())
                        guard let v = r.value() else { throw corrupt("truncated tombstone value") }
                        t[property] = v
                    }
                    tombstone = t
                }
            }
            guard keep[e] else { continue }
            result.append(
                PersistentHistoryChange(
                    changedObjectID: ObjectID(
                        entity: entity, storeIdentifier: token.storeIdentifier, primaryKey: Int64(bitPattern: key)),
                    changeType: type, updatedProperties: updated, tombstone: tombstone, oldValues: old, newValues: new,
                    transactionToken: token))
        }
        return result
    }
}

extension HistoryCoding {
    /// The changes of a transaction after a migration renamed or removed entities and
    /// properties: `entityName` gives an old entity's new name (nil: removed, its changes are left
    /// out), `propertyName` an old property's new name for an old entity (nil: removed, left out
    /// of updated properties, values and tombstones). Keys and values are kept as they were.
    /// - Returns: the new entity names, bytes and number of changes; nil when the bytes are
    ///   damaged (the caller leaves them as they are).
    package static func renamed(
        _ bytes: UnsafeRawBufferPointer, entityName: (String) -> String?, propertyName: (_ entity: String, _ property: String) -> String?
    ) -> (entities: [String], bytes: [UInt8], changeCount: Int)? {
        var r = ByteReader(bytes)
        guard r.byte() == Self.format, let entityCount = r.count() else { return nil }
        var oldEntities: [String] = []
        for _ in 0..<entityCount {
            guard let name = r.string() else { return nil }
            oldEntities.append(name)
        }
        guard let propertyCount = r.count() else { return nil }
        var oldProperties: [String] = []
        for _ in 0..<propertyCount {
            guard let name = r.string() else { return nil }
            oldProperties.append(name)
        }
        let newEntities = oldEntities.map(entityName)
        // The new lists, made as kept changes use them.
        var entityNames: [String] = []
        var entityIndex: [String: Int] = [:]
        var propertyNames: [String] = []
        var propertyIndex: [String: Int] = [:]
        func newIndex(_ name: String, _ names: inout [String], _ index: inout [String: Int]) -> UInt64 {
            if let i = index[name] { return UInt64(i) }
            index[name] = names.count
            names.append(name)
            return UInt64(names.count - 1)
        }
        func property(_ i: UInt64?) -> Int? {
            guard let i, i < UInt64(oldProperties.count) else { return nil }
            return Int(i)
        }
        guard let changeCount = r.count() else { return nil }
        var body = ByteWriter()
        var kept = 0
        for _ in 0..<changeCount {
            guard let head = r.varint(), let key = r.varint(), head >> 2 < UInt64(oldEntities.count),
                let type = PersistentHistoryChangeType(rawValue: Int(head & 3))
            else { return nil }
            let e = Int(head >> 2)
            var updated: [Int] = []
            var values: [(property: Int, old: StoredValue, new: StoredValue)] = []
            switch type {
            case .insert:
                break
            case .update:
                guard let n = r.count() else { return nil }
                for _ in 0..<n {
                    guard let p = property(r.varint()) else { return nil }
                    updated.append(p)
                }
                guard let m = r.count() else { return nil }
                for _ in 0..<m {
                    guard let p = property(r.varint()), let before = r.value(), let after = r.value() else { return nil }
                    values.append((p, before, after))
                }
            case .delete:
                guard let n = r.count() else { return nil }
                for _ in 0..<n {
                    guard let p = property(r.varint()), let v = r.value() else { return nil }
                    values.append((p, v, v))
                }
            }
            guard let newEntity = newEntities[e] else { continue }
            func renamed(_ p: Int) -> UInt64? {
                propertyName(oldEntities[e], oldProperties[p]).map { newIndex($0, &propertyNames, &propertyIndex) }
            }
            body.varint(newIndex(newEntity, &entityNames, &entityIndex) << 2 | UInt64(type.rawValue))
            body.varint(key)
            switch type {
            case .insert:
                break
            case .update:
                let names = updated.compactMap(renamed)
                body.varint(UInt64(names.count))
                for i in names { body.varint(i) }
                let pairs = values.compactMap { v in renamed(v.property).map { ($0, v.old, v.new) } }
                body.varint(UInt64(pairs.count))
                for (i, old, new) in pairs {
                    body.varint(i)
                    body.value(old)
                    body.value(new)
                }
            case .delete:
                let tombstone = values.compactMap { v in renamed(v.property).map { ($0, v.old) } }
                body.varint(UInt64(tombstone.count))
                for (i, value) in tombstone {
                    body.varint(i)
                    body.value(value)
                }
            }
            kept += 1
        }
        var out = ByteWriter()
        out.bytes.append(Self.format)
        out.varint(UInt64(entityNames.count))
        for n in entityNames { out.string(n) }
        out.varint(UInt64(propertyNames.count))
        for n in propertyNames { out.string(n) }
        out.varint(UInt64(kept))
        out.bytes.append(contentsOf: body.bytes)
        return (entityNames, out.bytes, kept)
    }
}

/// Appends the pieces of ``HistoryCoding``'s format to a byte array.
private struct ByteWriter {
    var bytes: [UInt8] = []

    @inline(__always) mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            varint(UInt64(buf.count))
            bytes.append(contentsOf: buf)
        }
    }

    mutating func value(_ v: StoredValue) {
        switch v {
        case .null:
            bytes.append(0)
        case .integer(let i):
            bytes.append(1)
            varint(UInt64(bitPattern: (i << 1) ^ (i >> 63)))
        case .real(let d):
            bytes.append(2)
            var bits = d.bitPattern
            for _ in 0..<8 {
                bytes.append(UInt8(truncatingIfNeeded: bits))
                bits >>= 8
            }
        case .text(let t):
            bytes.append(3)
            string(t)
        case .blob(let d):
            bytes.append(4)
            varint(UInt64(d.count))
            bytes.append(contentsOf: d)
        }
    }
}

/// Reads ``HistoryCoding``'s format; every read checks the bounds and returns nil past the end.
private struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    mutating func byte() -> UInt8? {
        guard offset < buffer.count else { return nil }
        defer { offset += 1 }
        return buffer[offset]
    }

    mutating func varint() -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while shift < 64 {
            guard let b = byte() else { return nil }
            result |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return result }
            shift += 7
        }
        return nil
    }

    /// A count that fits in the remaining bytes (each counted item takes at least one byte).
    mutating func count() -> Int? {
        guard let n = varint(), n <= UInt64(buffer.count - offset) else { return nil }
        return Int(n)
    }

    mutating func bytes(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, n <= buffer.count - offset else { return nil }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + n)])
    }

    mutating func string() -> String? {
        guard let n = count(), let b = bytes(n) else { return nil }
        return String(decoding: b, as: UTF8.self)
    }

    mutating func value() -> StoredValue? {
        guard let tag = byte() else { return nil }
        switch tag {
        case 0: return .null
        case 1:
            guard let z = varint() else { return nil }
            return .integer(Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1))
        case 2:
            guard let b = bytes(8) else { return nil }
            var bits: UInt64 = 0
            for i in (0..<8).reversed() { bits = bits << 8 | UInt64(b[i]) }
            return .real(Double(bitPattern: bits))
        case 3:
            guard let s = string() else { return nil }
            return .text(s)
        case 4:
            guard let n = count(), let b = bytes(n) else { return nil }
            return .blob(Data(b))
        default: return nil
        }
    }
}
