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
        objectID: ObjectID, type: PersistentHistoryChangeType, updatedPropertyNames: [String], values: [HistoryValueChange] = [],
        tombstone: [SlotValue] = []
    ) {
        let properties = objectID.entity.propertiesByName
        self.init(
            objectID: objectID, type: type, updatedSlots: updatedPropertyNames.compactMap { properties[$0]?.slot }.sorted(),
            values: values, tombstone: tombstone)
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
