import Foundation

/// Persistent history of the in-memory store: the same transactions, encoding, numbering,
/// filters and errors as a SQLite store's, kept in the store's state for the life of the store.
extension InMemoryStore {
    /// Records one transaction with the save (or batch request) in progress on `s`: it is
    /// appended when that save commits and dropped when it rolls back. Call it inside the
    /// state's lock, after the changes are written. Does nothing without changes.
    static func recordHistory(_ record: HistoryTransactionRecord, in s: inout State) {
        guard !record.changes.isEmpty else { return }
        s.history.pending = record.encoded(number: s.history.lastNumber + 1)
    }

    package var lastCommittedHistoryToken: PersistentHistoryToken? {
        guard tracksHistory else { return nil }
        let last = state.withLock { $0.history.lastNumber }
        return last > 0 ? PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: last) : nil
    }

    /// The committed history, or `.storeNotAttached` / `.invalidRequest` (not tracked).
    private func withHistory<T>(_ body: (inout HistoryState) throws(CoherenceError) -> T) throws(CoherenceError) -> T {
        guard tracksHistory else {
            throw CoherenceError(.invalidRequest, "The store does not track persistent history.", store: locationDescription)
        }
        return try state.withLock { (s: inout State) throws(CoherenceError) -> T in
            guard !s.isClosed else { throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription) }
            return try body(&s.history)
        }
    }

    package func currentHistoryToken() throws(CoherenceError) -> PersistentHistoryToken? {
        guard tracksHistory else { return nil }
        let last = try withHistory { $0.lastNumber }
        return PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: last)
    }

    package func fetchHistory(_ q: HistoryQuery) throws(CoherenceError) -> (transactions: [PersistentHistoryTransaction], count: Int) {
        let location = locationDescription
        let selected = try withHistory { (h: inout HistoryState) throws(CoherenceError) -> [StoredHistoryTransaction] in
            try q.checkNotExpired(deletedThrough: h.deletedThrough, last: h.lastNumber, store: location)
            var selected: [StoredHistoryTransaction] = []
            for t in h.transactions where q.matches(t) {
                selected.append(t)
                if q.limit > 0 && selected.count == q.limit { break }
            }
            return selected
        }
        if q.countsOnly { return ([], selected.count) }
        let entities = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var transactions: [PersistentHistoryTransaction] = []
        transactions.reserveCapacity(selected.count)
        for t in selected {
            transactions.append(try q.transaction(t, storeIdentifier: identifier, entities: entities, store: location))
        }
        return (transactions, transactions.count)
    }

    package func deleteHistory(_ q: HistoryQuery) throws(CoherenceError) -> Int {
        try withHistory { h in
            var deleted = 0
            var highest: Int64 = 0
            h.transactions.removeAll { t in
                guard q.matches(t) else { return false }
                deleted += 1
                highest = max(highest, t.number)
                return true
            }
            h.deletedThrough = max(h.deletedThrough, highest)
            return deleted
        }
    }
}
