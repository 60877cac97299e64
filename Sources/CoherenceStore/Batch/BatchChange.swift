/// One row a batch request changed: what persistent history records for it.
package struct BatchChange: Sendable, CustomStringConvertible {
    /// How the row changed.
    package enum Kind: Sendable, CustomStringConvertible {
        case insert, update, delete

        package var description: String {
            switch self {
            case .insert: return "insert"
            case .update: return "update"
            case .delete: return "delete"
            }
        }
    }

    /// The row's object (of its concrete entity).
    package var objectID: ObjectID
    package var kind: Kind
    /// For updates: the names of the properties that changed (attributes set, or the to-one
    /// relationship a nullify rule cleared); empty for inserts and deletes.
    package var updatedProperties: [String]
    /// For updates, when the store records history: the old and new values of the attributes
    /// whose history keeps them (``HistoryEntityLayout/recordsValues``); empty otherwise.
    package var values: [HistoryValueChange] = []
    /// For deletes, when the store records history: the row's values that its tombstone keeps
    /// (``HistoryEntityLayout/tombstoneSlots``), read before the row went; empty otherwise.
    package var tombstone: [SlotValue]

    package init(objectID: ObjectID, kind: Kind, updatedProperties: [String] = [], tombstone: [SlotValue] = []) {
        self.objectID = objectID
        self.kind = kind
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
    }

    package var description: String {
        kind == .update ? "update \(objectID) [\(updatedProperties.joined(separator: ", "))]" : "\(kind) \(objectID)"
    }
}
