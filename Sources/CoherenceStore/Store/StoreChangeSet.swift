import Foundation

/// Everything one save writes to one store, applied in one transaction.
package struct StoreChangeSet: Sendable {
    package var inserts: [RowInsert] = []
    package var updates: [RowUpdate] = []
    package var deletes: [RowDelete] = []
    package var joinInserts: [JoinChange] = []
    package var joinDeletes: [JoinChange] = []
    /// The stores inserted objects were assigned to (store identifier by temporary ID); other
    /// new objects go to the first attached store that holds their entity.
    package var assignedStores: [ObjectID: UUID] = [:]
    /// The saving context's author and name, recorded in the history of stores that track it.
    package var transactionAuthor: String?
    package var contextName: String?

    package init() {}

    package var isEmpty: Bool {
        inserts.isEmpty && updates.isEmpty && deletes.isEmpty && joinInserts.isEmpty && joinDeletes.isEmpty
    }
}
