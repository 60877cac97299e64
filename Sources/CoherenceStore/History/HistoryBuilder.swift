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
                // An object whose only change is a relationship kept elsewhere (the other side's
                // key) has its row checked and its version moved, but no property of its own
                // changed: no change of its own (a many-to-many change names it below).
                if rows[n].changedSlots.isEmpty { continue }
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
            let l = layout(of: d.objectID.entity)
            if !l.tombstoneSlots.isEmpty, let row = storedRows[d.objectID] { record.tombstone = l.tombstone(of: row) }
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
