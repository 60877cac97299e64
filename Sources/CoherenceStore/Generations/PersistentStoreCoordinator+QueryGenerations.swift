import Foundation

extension PersistentStoreCoordinator {
    /// How long a pinned query generation may go without a read before the coordinator releases
    /// it, in seconds (default 300). A pinned generation holds a read transaction on each SQLite
    /// store, which keeps the write-ahead log from being checkpointed back to its start: the log
    /// grows with every commit while it is held. So a generation that no context has read for
    /// this long is released after the coordinator's next save, or at its next pin; its contexts move to the
    /// generation current at their next read, as after
    /// ``ManagedObjectContext/setQueryGeneration(from:)`` with ``QueryGenerationToken/current``,
    /// and a warning is logged. `.infinity` (or a value that is not a number) keeps snapshots
    /// however long they go unused, as Core Data does; zero or less releases an unused one at
    /// the next check.
    ///
    /// ```swift
    /// coordinator.queryGenerationIdleTimeout = 60  // a minute without a read releases a snapshot
    /// ```
    public var queryGenerationIdleTimeout: TimeInterval {
        get { queryGenerations.idleTimeout.withLock { $0 } }
        set { queryGenerations.idleTimeout.withLock { $0 = newValue } }
    }

    /// Throws when a store cannot hold a snapshot (a SQLite store not in WAL mode).
    /// - Throws: `.queryGenerationsUnsupported`, naming the store.
    package func checkQueryGenerationsSupported(_ stores: [PersistentStore]? = nil) throws(CoherenceError) {
        for store in stores ?? persistentStores where !store.engine.supportsSnapshots {
            throw CoherenceError(
                .queryGenerationsUnsupported,
                "The store cannot hold a query generation: it is not in WAL mode (its journal mode is \(store.engine.journalModeDescription)).",
                store: Self.location(of: store))
        }
    }

    /// A new generation: a snapshot of every attached store as it is now, held once. With
    /// several stores, the snapshots are taken between saves (under the save lock), so that
    /// they show the same saves.
    /// - Throws: `.queryGenerationsUnsupported`; the store's error when a snapshot cannot be
    ///   opened.
    package func pinQueryGeneration() throws(CoherenceError) -> QueryGeneration {
        queryGenerations.releaseIdle()
        let stores = persistentStores
        try checkQueryGenerationsSupported(stores)
        func open() throws(CoherenceError) -> [UUID: any StoreSnapshot] {
            var snapshots: [UUID: any StoreSnapshot] = [:]
            do throws(CoherenceError) {
                for store in stores { snapshots[store.identifier] = try store.engine.openSnapshot() }
            } catch {
                for s in snapshots.values { s.close() }
                throw error
            }
            return snapshots
        }
        let snapshots = stores.count > 1 ? try saveLock.withLock(open) : try open()
        return queryGenerations.add(snapshots)
    }
}
