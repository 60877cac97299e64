import Foundation

extension PersistentStoreCoordinator {
    /// The commits that other coordinators — in this process or in other processes on the same
    /// machine, or on any machine for a server store (PostgreSQL, through `LISTEN`/`NOTIFY`) —
    /// make to this coordinator's stores opened with
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
    /// them: adds one to the commit counter of each SQLite store opened with
    /// ``StoreOptions/remoteChangeNotificationPost`` (the others are left alone), and notes the
    /// value as this coordinator's own. Every path that commits to a store calls it after the
    /// commit.
    package func announceCommit(to stores: [PersistentStore]) {
        // (A server store announces its commits itself, in the commit: see RemoteChangeSource.)
        for store in stores where store.options.remoteChangeNotificationPost && !(store.engine is any RemoteChangeSource) {
            guard let url = store.url else { continue }
            // Under the watches' lock: a look at the counter sees the value and knows it as ours.
            remoteWatches.withLock { watches in
                guard let reading = CommitCounterFile.increment(at: CommitCounterFile.path(forStoreAt: url)) else { return }
                if watches[store.identifier]?.store === store { watches[store.identifier]?.own.insert(reading) }
            }
        }
    }

    /// The watcher of an attached store's other writers (nil without the option; for tests).
    package func remoteChangeWatcher(for store: PersistentStore) -> RemoteChangeWatcher? {
        remoteWatches.withLock { $0[store.identifier]?.watcher }
    }

    /// Starts listening to the other writers of a SQLite store just attached.
    /// - Throws: `.storeOpenFailed` when its companion file cannot be made, read or watched.
    func startWatchingRemoteChanges(_ store: PersistentStore) throws(CoherenceError) {
        if let source = store.engine as? any RemoteChangeSource {
            // A server store hears its other writers itself.
            try source.startRemoteChanges { [weak self, weak store] token in
                guard let self, let store, self.persistentStores.contains(where: { $0 === store }) else { return }
                self.postRemoteChange(of: store, token: token)
            }
            return
        }
        guard let url = store.url else { return }
        let path = CommitCounterFile.path(forStoreAt: url)
        let watcher = RemoteChangeWatcher(companionPath: path) { [weak self, store] in self?.storeWoke(store) }
        try watcher.start()
        // Commits from here on are the others' news; the ones before are what the store is.
        // (Under the watches' lock, as a commit's announcement.)
        let started = remoteWatches.withLock { watches -> Bool in
            guard let reading = CommitCounterFile.reading(at: path) else { return false }
            watches[store.identifier] = RemoteWatch(store: store, watcher: watcher, seen: reading)
            return true
        }
        guard started else {
            watcher.stop()
            throw CoherenceError(.storeOpenFailed, "Cannot read the commit counter \(path).", store: url.path)
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

    /// The watcher of `store` woke up (on its queue): when the commit counter moved by more than
    /// this coordinator's own commits, drops the store's cached rows and posts the change.
    private func storeWoke(_ store: PersistentStore) {
        guard let url = store.url else { return }
        let path = CommitCounterFile.path(forStoreAt: url)
        let changed = remoteWatches.withLock { watches -> Bool in
            guard var watch = watches[store.identifier], watch.store === store else { return false }
            guard let reading = CommitCounterFile.reading(at: path) else {
                // Whether another coordinator committed is not known: say it may have.
                CoherenceLogging.log(
                    .warning, "store", "Cannot read the commit counter \(path); posting a remote change that may not be one.")
                return true
            }
            let others = watch.othersCommits(upTo: reading)
            watches[store.identifier] = watch
            return others
        }
        defer { remoteCheckHook.withLock { $0 }?(store.identifier, changed) }
        guard changed else { return }
        postRemoteChange(of: store, token: nil)
    }

    /// Drops the store's cached rows and posts a change another coordinator made to it, with
    /// `token` or else the store's current history token.
    private func postRemoteChange(of store: PersistentStore, token carried: PersistentHistoryToken?) {
        guard let url = store.url else { return }
        rowCache.removeAll(inStore: store.identifier)
        var token = carried
        if token == nil {
            do throws(CoherenceError) {
                token = try store.engine.currentHistoryToken()
            } catch {
                CoherenceLogging.log(.warning, "store", "A remote change is posted without its history token: \(error)")
            }
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
    /// The store's commit counter when last looked at.
    var seen: CommitCounterFile.Reading
    /// The counter values of this coordinator's commits not looked at yet.
    var own: Set<CommitCounterFile.Reading> = []

    /// Whether the commits counted up to `reading` include another coordinator's (then forgets
    /// the own ones it counts). A counter of another file (the companion file was deleted and
    /// made again) is counted from 0.
    mutating func othersCommits(upTo reading: CommitCounterFile.Reading) -> Bool {
        let before = reading.file == seen.file ? seen.count : 0
        let mine = own.filter { $0.file == reading.file && $0.count <= reading.count }.count
        own = own.filter { $0.file == reading.file && $0.count > reading.count }
        seen = reading
        guard reading.count >= before else { return true }  // counted again from less: say so
        return reading.count - before > UInt64(mine)
    }
}
