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

    /// The tombstone of a deleted row: its values at ``tombstoneSlots``.
    package func tombstone(of row: [StoredValue]) -> [SlotValue] {
        tombstoneSlots.map { SlotValue(slot: $0, value: $0 < row.count ? row[$0] : .null) }
    }
}
