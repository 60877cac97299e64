import Foundation

extension PersistentStoreCoordinator {
    /// Executes a history request: fetches transactions or deletes them (Core Data's
    /// `execute(_:with:)` for an `NSPersistentHistoryChangeRequest`). A context's
    /// `execute(_:)` does the same.
    ///
    /// ```swift
    /// let result = try coordinator.execute(.fetchHistory(after: lastToken))
    /// ```
    ///
    /// - Throws: `.historyTokenExpired` (fetching after a token whose following transactions
    ///   were deleted, see ``CoherenceError/Code/historyTokenExpired``); `.invalidHistoryToken`
    ///   (a token of a store that is not attached, or not among ``PersistentHistoryChangeRequest/affectedStores``);
    ///   `.invalidRequest` (no store to read that tracks history, a negative fetch limit,
    ///   filters on a delete, or a date that is not a number); `.unknownEntity` (an entity name the model lacks);
    ///   `.storeReadFailed` / `.storeWriteFailed`.
    @discardableResult
    public func execute(_ request: PersistentHistoryChangeRequest) throws(CoherenceError) -> PersistentHistoryResult {
        let stores = try historyStores(for: request)
        let query = try historyQuery(for: request)
        let resultType = request.resultType
        if request.isDelete {
            let deleted = try saveLock.withLock { () throws(CoherenceError) -> Int in
                var total = 0
                for store in stores { total += try store.engine.deleteHistory(query) }
                return total
            }
            return PersistentHistoryResult(resultType: resultType, transactions: [], count: deleted)
        }
        if query.countsOnly {
            var total = 0
            for store in stores { total += try store.engine.fetchHistory(query).count }
            if query.limit > 0 { total = min(total, query.limit) }
            return PersistentHistoryResult(resultType: resultType, transactions: [], count: total)
        }
        var transactions: [PersistentHistoryTransaction] = []
        for store in stores { transactions += try store.engine.fetchHistory(query).transactions }
        if stores.count > 1 {
            // Numbers are per store: across stores, the order is the clock's.
            let order = Dictionary(uniqueKeysWithValues: stores.enumerated().map { ($1.identifier, $0) })
            transactions.sort { a, b in
                if a.timestamp != b.timestamp { return a.timestamp < b.timestamp }
                let sa = order[a.storeID] ?? 0, sb = order[b.storeID] ?? 0
                return sa != sb ? sa < sb : a.transactionNumber < b.transactionNumber
            }
            if query.limit > 0 && transactions.count > query.limit { transactions = Array(transactions.prefix(query.limit)) }
        }
        return PersistentHistoryResult(resultType: resultType, transactions: transactions, count: transactions.count)
    }

    /// The token of the latest history transaction of the store among `stores` (nil: the attached
    /// stores) that tracks history, as Core Data's `currentPersistentHistoryToken(fromStores:)`;
    /// nil when none does. Fetching after it returns what is saved from now on.
    ///
    /// ```swift
    /// var lastToken = try coordinator.currentPersistentHistoryToken(fromStores: nil)
    /// ```
    ///
    /// A token names one store: when several of the stores track history, pass one of them.
    /// - Throws: `.invalidRequest` when several of the stores track history; `.storeNotAttached`
    ///   for a store that is not attached; `.storeReadFailed`.
    public func currentPersistentHistoryToken(fromStores stores: [PersistentStore]? = nil) throws(CoherenceError) -> PersistentHistoryToken?
    {
        let attached = persistentStores
        if let stores {
            for s in stores where !attached.contains(where: { $0 === s }) {
                throw CoherenceError(.storeNotAttached, "The store is not attached to this coordinator.", store: Self.location(of: s))
            }
        }
        let tracked = (stores ?? attached).filter { $0.engine.tracksHistory }
        guard let store = tracked.first else { return nil }
        guard tracked.count == 1 else {
            throw CoherenceError(
                .invalidRequest,
                "\(tracked.count) of the stores track persistent history and a token names one store: pass one store (fromStores: [store])."
            )
        }
        return try store.engine.currentHistoryToken()
    }

    /// The stores a history request reads or trims.
    private func historyStores(for request: PersistentHistoryChangeRequest) throws(CoherenceError) -> [PersistentStore] {
        let attached = persistentStores
        if let affected = request.affectedStores {
            for s in affected where !attached.contains(where: { $0 === s }) {
                throw CoherenceError(.storeNotAttached, "The store is not attached to this coordinator.", store: Self.location(of: s))
            }
        }
        if let token = request.token {
            guard let store = attached.first(where: { $0.identifier == token.storeIdentifier }) else {
                throw CoherenceError(
                    .invalidHistoryToken,
                    "The history token belongs to store \(token.storeIdentifier.uuidString), which is not attached to this coordinator.",
                    store: token.storeIdentifier.uuidString)
            }
            if let affected = request.affectedStores, !affected.contains(where: { $0 === store }) {
                throw CoherenceError(
                    .invalidHistoryToken,
                    "The history token belongs to store \(Self.location(of: store)), which is not among the request's affected stores.",
                    store: token.storeIdentifier.uuidString)
            }
            guard store.engine.tracksHistory else { throw Self.historyNotTracked(store) }
            return [store]
        }
        if let affected = request.affectedStores {
            for s in affected where !s.engine.tracksHistory { throw Self.historyNotTracked(s) }
            return affected
        }
        let tracked = attached.filter { $0.engine.tracksHistory }
        if tracked.isEmpty {
            throw CoherenceError(
                .invalidRequest, "No attached store tracks persistent history (StoreOptions.persistentHistoryTracking).")
        }
        return tracked
    }

    private static func historyNotTracked(_ store: PersistentStore) -> CoherenceError {
        CoherenceError(
            .invalidRequest, "The store does not track persistent history (StoreOptions.persistentHistoryTracking).",
            store: location(of: store))
    }

    /// The request as each store runs it.
    private func historyQuery(for request: PersistentHistoryChangeRequest) throws(CoherenceError) -> HistoryQuery {
        // (A NaN date is before and after nothing: SQLite and PostgreSQL took every
        // transaction as written before it, and a delete emptied the history.)
        if let date = request.date, date.timeIntervalSinceReferenceDate.isNaN {
            throw CoherenceError(.invalidRequest, "The date of \(request) is not a number (NaN); nothing was read or deleted.")
        }
        var query: HistoryQuery
        switch (request.operation, request.bound) {
        case (.fetch, .token(let t)): query = HistoryQuery(bound: .afterNumber(t?.transactionNumber))
        case (.fetch, .date(let d)): query = HistoryQuery(bound: .afterDate(d))
        case (.delete, .token(let t)): query = HistoryQuery(bound: .beforeNumber(t?.transactionNumber))
        case (.delete, .date(let d)): query = HistoryQuery(bound: .beforeDate(d))
        }
        if request.isDelete {
            guard !request.hasFilters else {
                throw CoherenceError(
                    .invalidRequest,
                    "A history delete takes no filters (authors, context names, entities, fetch limit): it deletes every transaction before its token or date."
                )
            }
            return query
        }
        guard request.fetchLimit >= 0 else {
            throw CoherenceError(.invalidRequest, "The fetch limit \(request.fetchLimit) is negative.")
        }
        query.authors = request.authors
        query.excludedAuthors = request.excludedAuthors
        query.contextNames = request.contextNames
        query.limit = request.fetchLimit
        query.includesChanges = request.resultType == .transactionsAndChanges
        query.countsOnly = request.resultType == .count || request.resultType == .statusOnly
        if let names = request.entityNames {
            var expanded: Set<String> = []
            for name in names {
                guard let entity = managedObjectModel.entitiesByName[name] else {
                    throw CoherenceError(.unknownEntity, "The model has no entity named '\(name)'.", entity: name)
                }
                for e in managedObjectModel.entities where e.isKindOf(entity) { expanded.insert(e.name) }
            }
            query.entityNames = expanded
        }
        return query
    }
}
