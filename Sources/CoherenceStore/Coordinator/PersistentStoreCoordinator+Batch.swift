import Foundation

extension PersistentStoreCoordinator {
    /// Runs a batch request on the stores it concerns, under the save lock: each store's part
    /// in one transaction, and every store commits only when all of them succeeded (a failure
    /// after another store committed is reported, as for saves). Afterwards the row cache
    /// forgets the rows the request updated or deleted, so faults read their new values, and
    /// ``batchCommits`` yields.
    ///
    /// An insert goes to the first of the stores that hold its entity; an update or a delete by
    /// fetch runs in each of them (a fetch limit applies per store); a delete by IDs runs in the
    /// store of each ID.
    /// - Parameters:
    ///   - affectedStores: the stores to consider (nil: every attached store).
    ///   - author: the history transactions' author (the executing context's
    ///     `transactionAuthor`; nil through the coordinator).
    ///   - contextName: the history transactions' context name (the executing context's name).
    /// - Throws: `.noStoreForEntity`, `.storeNotAttached`, `.invalidRequest` (a temporary ID),
    ///   and the errors of the stores (see `BatchExecutor`).
    package func executeBatch(
        _ request: StoreBatchRequest, affectedStores: [PersistentStore]?, author: String? = nil, contextName: String? = nil
    ) throws(CoherenceError) -> StoreBatchResult {
        try saveLock.withLock { () throws(CoherenceError) -> StoreBatchResult in
            let parts = try batchParts(request, affectedStores: affectedStores)
            var begun: [PersistentStore] = []
            var result = StoreBatchResult()
            for (store, part) in parts {
                do throws(CoherenceError) {
                    result.append(try store.engine.beginBatch(part, author: author, contextName: contextName))
                    begun.append(store)
                } catch {
                    for s in begun { s.engine.rollbackSave() }
                    throw error
                }
            }
            try commit(begun)
            if !rowCache.isEmpty {
                rowCache.remove(result.changes.compactMap { $0.kind == .insert ? nil : $0.objectID })
            }
            batchCommits.yield(())
            return result
        }
    }

    /// The stores a batch request runs on, each with its part of the request.
    private func batchParts(
        _ request: StoreBatchRequest, affectedStores: [PersistentStore]?
    ) throws(CoherenceError) -> [(PersistentStore, StoreBatchRequest)] {
        if let affectedStores {
            for s in affectedStores where persistentStore(withIdentifier: s.identifier) !== s {
                throw CoherenceError(
                    .storeNotAttached, "An affected store of the batch request is not attached to this coordinator.",
                    store: Self.location(of: s))
            }
        }
        func holding(_ entity: EntityDescription) throws(CoherenceError) -> [PersistentStore] {
            guard let affectedStores else { return try readStores(for: entity) }
            let stores = affectedStores.filter { $0.holds(entity) }
            if stores.isEmpty { throw Self.noStoreError(entity) }
            return stores
        }
        switch request {
        case .insert(let insert):
            guard let store = try holding(insert.entity).first else { throw Self.noStoreError(insert.entity) }
            return [(store, request)]
        case .update(let update):
            return try holding(update.fetch.entity).map { ($0, request) }
        case .delete(let delete):
            if let fetch = delete.fetch {
                let stores = try holding(fetch.entity)
                guard stores.count > 1, fetch.limit != nil || fetch.offset > 0 else { return stores.map { ($0, request) } }
                // A limit or offset counts the objects of every store together, in the fetch's
                // order (each store applying it to its own rows would delete others, and more):
                // the objects are chosen first, and each store deletes its own by ID.
                var byStore: [UUID: [ObjectID]] = [:]
                for (id, _) in try fetchRows(fetch, from: stores) {
                    if let sid = id.storeIdentifier { byStore[sid, default: []].append(id) }
                }
                return stores.compactMap { store in
                    byStore[store.identifier].map { (store, .delete(StoreBatchRequest.Delete(objectIDs: $0))) }
                }
            }
            var order: [UUID] = []
            var byStore: [UUID: [ObjectID]] = [:]
            for id in delete.objectIDs {
                guard let sid = id.storeIdentifier else {
                    throw CoherenceError(
                        .invalidRequest, "\(id) is a temporary ID: an object that was never saved cannot be batch deleted.",
                        entity: id.entity.name, objectID: id)
                }
                if byStore[sid] == nil { order.append(sid) }
                byStore[sid, default: []].append(id)
            }
            var parts: [(PersistentStore, StoreBatchRequest)] = []
            for sid in order {
                let ids = byStore[sid] ?? []
                guard let store = persistentStore(withIdentifier: sid), affectedStores?.contains(where: { $0 === store }) ?? true else {
                    throw CoherenceError(
                        .storeNotAttached,
                        "The store of \(ids.first.map(\.description) ?? "an object") is not attached (or not an affected store).",
                        entity: ids.first?.entity.name, objectID: ids.first, store: sid.uuidString)
                }
                parts.append((store, .delete(StoreBatchRequest.Delete(objectIDs: ids))))
            }
            return parts
        }
    }
}
