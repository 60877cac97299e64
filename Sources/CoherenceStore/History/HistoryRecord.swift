import Foundation

/// One object's change as a store records it in its history (slots, not names: names are
/// written when the transaction is encoded).
package struct HistoryChangeRecord: Sendable {
    /// The object's permanent ID.
    package var objectID: ObjectID
    package var type: PersistentHistoryChangeType
    /// For an update: the slots of the properties it changed, ascending.
    package var updatedSlots: [Int]
    /// For an update: the old and new values of the changed attributes that record their values.
    package var values: [HistoryValueChange]
    /// For a delete: the values history keeps (``HistoryEntityLayout/tombstoneSlots``).
    package var tombstone: [SlotValue]

    package init(
        objectID: ObjectID, type: PersistentHistoryChangeType, updatedSlots: [Int] = [], values: [HistoryValueChange] = [],
        tombstone: [SlotValue] = []
    ) {
        self.objectID = objectID
        self.type = type
        self.updatedSlots = updatedSlots
        self.values = values
        self.tombstone = tombstone
    }
}

extension HistoryChangeRecord {
    /// A change whose updated properties are named (as a batch request knows them); names the
    /// object's entity does not have are left out.
    package init(
        objectID: ObjectID, type: PersistentHistoryChangeType, updatedPropertyNames: [String], tombstone: [SlotValue] = []
    ) {
        let properties = objectID.entity.propertiesByName
        self.init(
            objectID: objectID, type: type, updatedSlots: updatedPropertyNames.compactMap { properties[$0]?.slot }.sorted(),
            tombstone: tombstone)
    }
}

/// An attribute's value before and after an update.
package struct HistoryValueChange: Sendable {
    package var slot: Int
    package var old: StoredValue
    package var new: StoredValue

    package init(slot: Int, old: StoredValue, new: StoredValue) {
        self.slot = slot
        self.old = old
        self.new = new
    }
}

/// What one save (or batch request) records in one store's history: who wrote it and the
/// changes. A store that tracks history appends it with the data, in the same SQL transaction
/// (``SQLiteStore/recordHistory(_:)``; the in-memory store records it with its save).
package struct HistoryTransactionRecord: Sendable {
    package var author: String?
    package var contextName: String?
    package var changes: [HistoryChangeRecord]

    package init(author: String?, contextName: String?, changes: [HistoryChangeRecord]) {
        self.author = author
        self.contextName = contextName
        self.changes = changes
    }

    /// The identifier recorded as every transaction's process (this process's ID).
    package static let processID = String(ProcessInfo.processInfo.processIdentifier)

    /// The transaction as stored, numbered `number` and stamped now.
    package func encoded(number: Int64) -> StoredHistoryTransaction {
        let (entities, bytes) = HistoryCoding.encode(changes)
        return StoredHistoryTransaction(
            number: number, timestamp: Date(), author: author, contextName: contextName, processID: Self.processID,
            entities: entities, changeCount: changes.count, changes: bytes)
    }
}

/// A transaction as a store keeps it: its columns, and its changes encoded by
/// ``HistoryCoding``. The SQLite store keeps one row of these per transaction; the in-memory
/// store keeps the values.
package struct StoredHistoryTransaction: Sendable {
    package var number: Int64
    package var timestamp: Date
    package var author: String?
    package var contextName: String?
    package var processID: String
    /// The names of the entities whose objects changed, for filtering by entity.
    package var entities: [String]
    package var changeCount: Int
    package var changes: [UInt8]

    /// The `Z_ENTITIES` column: every name between bars (`|Person|Town|`), so that `instr` finds
    /// `|Person|` exactly.
    package var entitiesColumn: String { "|" + entities.joined(separator: "|") + "|" }
}

/// Which of an entity's values history keeps.
package struct HistoryEntityLayout {
    /// Slots of the attributes a delete's tombstone keeps: those of the uniqueness constraints of
    /// the entity and its ancestors, and those marked `preservesValueInHistoryOnDeletion`
    /// (stored attributes only), ascending.
    package let tombstoneSlots: [Int]
    /// Whether each slot is a stored attribute whose old and new values an update records.
    package let recordsValues: [Bool]
    package let hasRecordedValues: Bool

    package init(_ entity: EntityDescription) {
        var constrained: Set<String> = []
        var recordsAll = false
        var e: EntityDescription? = entity
        while let current = e {
            for c in current.uniquenessConstraints { constrained.formUnion(c) }
            if current.recordsValuesInHistory { recordsAll = true }
            e = current.superentity
        }
        var tombstone: [Int] = []
        var records = [Bool](repeating: false, count: entity.properties.count)
        for a in entity.attributes where !a.isTransient {
            if a.preservesValueInHistoryOnDeletion || constrained.contains(a.name) { tombstone.append(a.slot) }
            if recordsAll || a.recordsValuesInHistory { records[a.slot] = true }
        }
        self.tombstoneSlots = tombstone.sorted()
        self.recordsValues = records
        self.hasRecordedValues = records.contains(true)
    }
}

/// Turns a save's change set into the changes history records.
package struct HistoryBuilder {
    private var layouts: [ObjectIdentifier: HistoryEntityLayout] = [:]

    package init() {}

    /// The last layout asked for: consecutive objects are almost always of one entity.
    private var last: (key: ObjectIdentifier, layout: HistoryEntityLayout)?

    /// The layout of an entity (worked out once per builder).
    package mutating func layout(of entity: EntityDescription) -> HistoryEntityLayout {
        let key = ObjectIdentifier(entity)
        if let last, last.key == key { return last.layout }
        let l = layouts[key] ?? HistoryEntityLayout(entity)
        layouts[key] = l
        last = (key, l)
        return l
    }

    /// The deleted objects whose tombstones need their stored values (their entity keeps some).
    package mutating func objectsNeedingTombstones(_ changes: StoreChangeSet) -> [ObjectID] {
        var ids: [ObjectID] = []
        for d in changes.deletes where !layout(of: d.objectID.entity).tombstoneSlots.isEmpty { ids.append(d.objectID) }
        return ids
    }

    /// The changes of a save: one per inserted, updated or deleted object (`insertedIDs`: the
    /// permanent IDs of the inserts, aligned with them; `storedRows`: the values, before the
    /// save, of the objects ``objectsNeedingTombstones(_:)`` listed). Objects whose many-to-many
    /// relationships changed are updates naming those relationships.
    package mutating func changes(
        for changes: StoreChangeSet, insertedIDs: [ObjectID], storedRows: [ObjectID: [StoredValue]]
    ) -> [HistoryChangeRecord] {
        var records: [HistoryChangeRecord] = []
        records.reserveCapacity(changes.inserts.count + changes.updates.count + changes.deletes.count)
        for id in insertedIDs { records.append(HistoryChangeRecord(objectID: id, type: .insert)) }
        changes.updates.withUnsafeBufferPointer { rows in
            for n in rows.indices {
                let id = rows[n].objectID
                var record = HistoryChangeRecord(objectID: id, type: .update, updatedSlots: rows[n].changedSlots)
                let l = layout(of: id.entity)
                if l.hasRecordedValues, rows[n].changedSlots.contains(where: { $0 < l.recordsValues.count && l.recordsValues[$0] }) {
                    let new = rows[n].values
                    let old = rows[n].cachedValues
                    for slot in rows[n].changedSlots where slot < l.recordsValues.count && l.recordsValues[slot] {
                        let before = old.map { slot < $0.count ? $0[slot] : .null } ?? .null
                        record.values.append(HistoryValueChange(slot: slot, old: before, new: new[slot]))
                    }
                }
                records.append(record)
            }
        }
        for d in changes.deletes {
            var record = HistoryChangeRecord(objectID: d.objectID, type: .delete)
            let slots = layout(of: d.objectID.entity).tombstoneSlots
            if !slots.isEmpty, let row = storedRows[d.objectID] {
                record.tombstone = slots.map { SlotValue(slot: $0, value: $0 < row.count ? row[$0] : .null) }
            }
            records.append(record)
        }
        if !changes.joinInserts.isEmpty || !changes.joinDeletes.isEmpty {
            addJoinChanges(changes, to: &records)
        }
        return records
    }

    /// Records many-to-many changes as updates of both objects (merged into their update when
    /// they have one; objects inserted or deleted by the save are left as they are).
    private func addJoinChanges(_ changes: StoreChangeSet, to records: inout [HistoryChangeRecord]) {
        var index: [ObjectID: Int] = [:]
        for (n, r) in records.enumerated() { index[r.objectID] = n }
        // Inserts with temporary IDs are known by their permanent ID in `records` only.
        let temporary = Set(changes.inserts.lazy.map(\.objectID).filter(\.isTemporaryID))
        func touch(_ id: ObjectID, _ slot: Int) {
            guard !id.isTemporaryID || !temporary.contains(id) else { return }
            if let n = index[id] {
                guard records[n].type == .update else { return }
                if !records[n].updatedSlots.contains(slot) {
                    records[n].updatedSlots.append(slot)
                    records[n].updatedSlots.sort()
                }
            } else if !id.isTemporaryID {
                index[id] = records.count
                records.append(HistoryChangeRecord(objectID: id, type: .update, updatedSlots: [slot]))
            }
        }
        for j in changes.joinInserts + changes.joinDeletes {
            touch(j.source, j.relationship.slot)
            if let inverse = j.relationship.inverseRelationship { touch(j.destination, inverse.slot) }
        }
    }
}
