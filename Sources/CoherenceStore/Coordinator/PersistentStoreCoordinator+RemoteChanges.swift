import Foundation

extension PersistentStoreCoordinator {
    /// The commits that other coordinators — in this process or in other processes on the same
    /// machine — make to this coordinator's SQLite stores opened with
    /// ``StoreOptions/remoteChangeNotificationPost``; each access is a new stream. The same
    /// events are posted as `Notification.Name.persistentStoreRemoteChange`.
    ///
    /// Before a change is delivered, the coordinator drops the rows it cached for that store, so
    /// that faults and `refresh(_:mergeChanges:)` read what the other writer committed. Several
    /// commits close together may arrive as one change. The streams end when the coordinator
    /// goes away.
    ///
    /// ```swift
    /// for await change in coordinator.remoteChanges {
    ///     await viewContext.perform { viewContext.refreshAllObjects() }
    ///     print("another process changed", change.storeURL.lastPathComponent)
    /// }
    /// ```
    public var remoteChanges: AsyncStream<PersistentStoreRemoteChange> { remoteChangeBroadcaster.stream() }

    /// Tells the other coordinators that have these stores open that this one committed to
    /// them: writes the companion file of each SQLite store opened with
    /// ``StoreOptions/remoteChangeNotificationPost`` (the others are left alone). Every path
    /// that commits to a store calls it after the commit.
    package func announceCommit(to stores: [PersistentStore]) {
        for store in stores where store.options.remoteChangeNotificationPost {
            guard let url = store.url else { continue }
            RemoteChangeWatcher.announceCommit(companionPath: RemoteChangeWatcher.companionPath(forStoreAt: url))
        }
    }

    /// The watcher of an attached store's other writers (nil without the option; for tests).
    package func remoteChangeWatcher(for store: PersistentStore) -> RemoteChangeWatcher? {
        remoteWatches.withLock { $0[store.identifier]?.watcher }
    }

    /// Starts listening to the other writers of a SQLite store just attached.
    /// - Throws: `.storeOpenFailed` when its companion file cannot be made or watched.
    func startWatchingRemoteChanges(_ store: PersistentStore) throws(CoherenceError) {
        guard let url = store.url else { return }
        let watcher = RemoteChangeWatcher(companionPath: RemoteChangeWatcher.companionPath(forStoreAt: url)) {
            [weak self, store] in
            self?.storeWoke(store)
        }
        // Commits from here on are the others' news; the ones before are what the store is.
        let version = try saveLock.withLock { () throws(CoherenceError) -> Int64? in try store.engine.externalCommitVersion() }
        guard let version else { return }
        remoteWatches.withLock { $0[store.identifier] = RemoteWatch(store: store, watcher: watcher, lastVersion: version) }
        do {
            try watcher.start()
        } catch {
            remoteWatches.withLock { $0[store.identifier] = nil }
            throw error
        }
    }

    /// Stops listening to the other writers of `store` (all stores when nil). The watchers'
    /// descriptors are closed on their queues right after.
    func stopWatchingRemoteChanges(_ store: PersistentStore? = nil) {
        let stopped = remoteWatches.withLock { watches -> [RemoteWatch] in
            guard let store else {
                defer { watches = [:] }
                return Array(watches.values)
            }
            guard let watch = watches[store.identifier], watch.store === store else { return [] }
            watches[store.identifier] = nil
            return [watch]
        }
        for watch in stopped { watch.watcher.stop() }
    }

    /// The watcher of `store` woke up (on its queue): when another connection committed since
    /// the last look, drops the store's cached rows and posts the change.
    private func storeWoke(_ store: PersistentStore) {
        // Under the save lock: the version is read on the writer connection, and a store being
        // removed is closed under this lock after it left `remoteWatches`.
        let changed = saveLock.withLock { () -> Bool in
            guard let last = remoteWatches.withLock({ $0[store.identifier] }).flatMap({ $0.store === store ? $0.lastVersion : nil })
            else { return false }
            let version: Int64?
            do throws(CoherenceError) {
                version = try store.engine.externalCommitVersion()
            } catch {
                CoherenceLogging.log(.warning, "store", "Cannot tell whether another process changed the store: \(error)")
                return false
            }
            guard let version, version != last else { return false }
            remoteWatches.withLock { $0[store.identifier]?.lastVersion = version }
            return true
        }
        defer { remoteCheckHook.withLock { $0 }?(store.identifier, changed) }
        guard changed, let url = store.url else { return }
        rowCache.removeAll(inStore: store.identifier)
        var token: (any Sendable)?
        do throws(CoherenceError) {
            token = try store.engine.currentHistoryToken()  // HOOK(history)
        } catch {
            CoherenceLogging.log(.warning, "store", "A remote change is posted without its history token: \(error)")
        }
        let change = PersistentStoreRemoteChange(storeURL: url, storeIdentifier: store.identifier, historyToken: token)
        NotificationCenter.default.post(name: .persistentStoreRemoteChange, object: self, userInfo: change.userInfo)
        remoteChangeBroadcaster.yield(change)
    }
}

/// A store whose other writers a coordinator listens to.
struct RemoteWatch {
    let store: PersistentStore
    let watcher: RemoteChangeWatcher
    /// The store's ``StoreEngine/externalCommitVersion()`` when last looked at.
    var lastVersion: Int64
}
