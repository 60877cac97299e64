import Foundation

/// A batch request as a store executes it: rows inserted, updated or deleted in the store
/// without managed objects (see `BatchInsertRequest`, `BatchUpdateRequest` and
/// `BatchDeleteRequest` in the context layer, which compile to this form).
///
/// Values are already in stored form and of the right type; the store checks the rest (required
/// attributes, validation rules, uniqueness) and applies delete rules.
package enum StoreBatchRequest {
    case insert(Insert)
    case update(Update)
    case delete(Delete)

    /// Rows of one entity to insert.
    package struct Insert {
        /// The entity of every row (not abstract).
        package var entity: EntityDescription
        /// What a row whose values a uniqueness constraint already holds does.
        package var uniquenessConflicts: UniquenessResolution
        /// The number of rows when known before the first (keys are then reserved at once).
        package var rowCount: Int?
        /// Whether the result lists the rows (their IDs and changes); when false and the store
        /// records no history, only their number is reported, which spares an ID per row.
        package var listsRows = true
        /// Fills `values` — the entity's initial values by slot on entry — with the next row;
        /// returns false (leaving `values` unused) when no rows remain. Called under the
        /// coordinator's save lock (the in-memory store calls it for every row before it locks
        /// its state): it must not save through the coordinator.
        package var nextRow: (inout [StoredValue]) throws(CoherenceError) -> Bool

        package init(
            entity: EntityDescription, uniquenessConflicts: UniquenessResolution, rowCount: Int?,
            nextRow: @escaping (inout [StoredValue]) throws(CoherenceError) -> Bool
        ) {
            self.entity = entity
            self.uniquenessConflicts = uniquenessConflicts
            self.rowCount = rowCount
            self.nextRow = nextRow
        }
    }

    /// What an inserted row that collides with a stored one on a uniqueness constraint does.
    package enum UniquenessResolution: Sendable {
        /// The request fails (a `.conflict` error naming the entity, constraint and values).
        case fail
        /// The stored row takes the new row's attribute values (Core Data's object-trump upsert).
        case updateExisting
        /// The stored row is kept as it is and the new row dropped (store trump).
        case keepExisting
    }

    /// New values for the attributes of the rows a fetch matches.
    package struct Update: Sendable {
        /// The rows (entity, sub-entities, predicate, limit).
        package var fetch: StoreFetch
        /// The attributes set, each once.
        package var attributes: [AttributeDescription]
        /// The new value of each attribute, aligned with `attributes`.
        package var values: [StoredValue]

        package init(fetch: StoreFetch, attributes: [AttributeDescription], values: [StoredValue]) {
            self.fetch = fetch
            self.attributes = attributes
            self.values = values
        }
    }

    /// Rows to delete: those a fetch matches, or objects by ID (IDs of rows that do not exist
    /// are ignored).
    package struct Delete: Sendable {
        package var fetch: StoreFetch?
        package var objectIDs: [ObjectID]

        package init(fetch: StoreFetch) {
            self.fetch = fetch
            self.objectIDs = []
        }

        package init(objectIDs: [ObjectID]) {
            self.fetch = nil
            self.objectIDs = objectIDs
        }
    }
}
