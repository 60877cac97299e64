import Foundation

/// Everything one save writes to one store, applied in one transaction.
package struct StoreChangeSet: Sendable {
    package var inserts: [RowInsert] = []
    /// The updated rows. Rows added with ``appendUpdate(_:)`` are noted as they come (see
    /// ``updatesInKeyOrder`` and ``updatesAllStored(in:)``), so writers need no pass over them
    /// to learn their order or store; rows added otherwise make those answers unknown.
    package var updates: [RowUpdate] = []
    package var deletes: [RowDelete] = []
    package var joinInserts: [JoinChange] = []
    package var joinDeletes: [JoinChange] = []
    /// The places of destinations of ordered relationships (see ``OrderChange``).
    package var orders: [OrderChange] = []
    /// The stores inserted objects were assigned to (store identifier by temporary ID); other
    /// new objects go to the first attached store that holds their entity.
    package var assignedStores: [ObjectID: UUID] = [:]
    /// The saving context's author and name, recorded in the history of stores that track it.
    package var transactionAuthor: String?
    package var contextName: String?
    /// What ``appendUpdate(_:)`` noted of the rows it added.
    @usableFromInline var noted = NotedUpdates()

    package init() {}

    package var isEmpty: Bool {
        inserts.isEmpty && updates.isEmpty && deletes.isEmpty && joinInserts.isEmpty && joinDeletes.isEmpty && orders.isEmpty
    }

    /// Adds an updated row, noting its key and store (read while the row is at hand).
    @inlinable @inline(__always)
    package mutating func appendUpdate(_ row: consuming RowUpdate) {
        noted.note(row.objectID, first: updates.isEmpty || noted.count != updates.count)
        updates.append(row)
        noted.count = updates.count
    }

    /// Whether the updates are in ascending primary-key order; nil when not known (a row was
    /// added other than by ``appendUpdate(_:)``).
    package var updatesInKeyOrder: Bool? {
        noted.count == updates.count ? noted.ascending : nil
    }

    /// Whether every update is of a row of the store `identifier`; nil when not known (a row
    /// was added other than by ``appendUpdate(_:)``).
    package func updatesAllStored(in identifier: UUID) -> Bool? {
        guard noted.count == updates.count else { return nil }
        guard let first = updates.first else { return true }
        return noted.oneStore && first.objectID.isStored(in: identifier)
    }
}

/// The order and store of the updated rows of a change set, noted as they are added.
@usableFromInline
struct NotedUpdates: Sendable {
    /// The number of rows noted (the facts hold while the change set has this many).
    @usableFromInline var count = 0
    /// The keys ascend.
    @usableFromInline var ascending = true
    /// Every row has the store of the first.
    @usableFromInline var oneStore = true
    @usableFromInline var lastKey: Int64 = 0
    @usableFromInline var storeWord0: UInt64 = 0
    @usableFromInline var storeWord1: UInt64 = 0

    @usableFromInline init() {}

    @inlinable @inline(__always)
    mutating func note(_ id: borrowing ObjectID, first: Bool) {
        if first {
            self = NotedUpdates()
            storeWord0 = id.storeHigh
            storeWord1 = id.storeLow
            oneStore = id.hasStore
        } else {
            if id.primaryKey < lastKey { ascending = false }
            if id.storeHigh != storeWord0 || id.storeLow != storeWord1 || !id.hasStore { oneStore = false }
        }
        lastKey = id.primaryKey
    }
}
