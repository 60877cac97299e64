import Foundation

extension ManagedObjectContext {
    /// The query generation the context reads, as Core Data's `queryGenerationToken`: nil when
    /// the context is unpinned (it reads the stores as they are now),
    /// ``QueryGenerationToken/current`` when it is pinned and has not read since (it pins at its
    /// next read), else the token of its snapshot, which another context of the same
    /// coordinator can be given to read the same snapshot. A child context reads through its
    /// parent, so it reports its parent's generation. Safe to read on any thread.
    public var queryGenerationToken: QueryGenerationToken? {
        if let parent { return parent.queryGenerationToken }
        return settings.withLock { $0.generationPin }?.token
    }

    /// Pins the context to a snapshot of its coordinator's stores, or unpins it, as Core Data's
    /// `setQueryGenerationFrom(_:)`.
    ///
    /// - ``QueryGenerationToken/current``: the context reads the stores as they are at its next
    ///   read (a fetch, a count, a fault or a relationship load), and keeps reading that
    ///   snapshot: saves of other contexts and commits of other processes are invisible, and an
    ///   object deleted elsewhere can still be read.
    /// - A token from another context's ``queryGenerationToken``: the two read the same snapshot.
    /// - `nil`: the context reads the stores as they are now again.
    ///
    /// The context moves to a new snapshot of the current state (pinned at its next read) when
    /// it saves, resets, or merges changes (``mergeChanges(fromContextDidSave:)``,
    /// ``mergeChanges(fromRemoteContextSave:into:)``, or an automatic merge, see
    /// ``automaticallyMergesChangesFromParent``), and, when it was pinned with `.current` (or
    /// has moved on since), when it refreshes all its objects (``refreshAllObjects()``).
    /// Objects already in memory keep their values until they are refreshed. A snapshot is released when no context holds it any more, or
    /// when no read used it for ``PersistentStoreCoordinator/queryGenerationIdleTimeout``.
    ///
    /// ```swift
    /// try viewContext.setQueryGeneration(from: .current)
    /// let notes = try viewContext.fetch(FetchRequest<Note>())   // the snapshot is taken here
    /// // … a background context deletes a note and saves …
    /// print(notes[0].title)                                     // still readable
    /// ```
    ///
    /// - Throws: `.queryGenerationsUnsupported` (naming the store) when a store of the
    ///   coordinator cannot hold a snapshot (a SQLite store not in WAL mode);
    ///   `.invalidQueryGenerationToken` for a token of another coordinator or of a released
    ///   snapshot; `.invalidRequest` on a child context (it reads through its parent's
    ///   generation: pin the parent). On an error the context's generation is left as it was.
    public func setQueryGeneration(from token: QueryGenerationToken?) throws(CoherenceError) {
        assertOnExecutor()
        if parent != nil {
            throw CoherenceError(
                .invalidRequest,
                "The child context '\(name ?? "unnamed")' reads through its parent's query generation; set the generation on the parent.")
        }
        let coordinator = persistentStoreCoordinator
        let pin: QueryGenerationPin?
        if let token, token != .current {
            pin = try QueryGenerationPin(token, of: coordinator)
        } else if token == .current {
            try coordinator.checkQueryGenerationsSupported()
            pin = QueryGenerationPin(currentOf: coordinator)
        } else {
            pin = nil
        }
        let old = settings.withLock { s -> QueryGenerationPin? in
            defer { s.generationPin = pin }
            return s.generationPin
        }
        source = pin.map { GenerationSource(pin: $0) } ?? coordinator
        _ = old  // released here, after the new pin holds its generation
    }

    /// Moves a pinned context to the current generation (pinned at its next read); nothing for
    /// an unpinned one. Called when the context saves, resets or merges.
    package func advanceQueryGeneration() {
        guard parent == nil, let pin = settings.withLock({ $0.generationPin }) else { return }
        pin.advance()
    }

    /// Moves a context pinned to ``QueryGenerationToken/current`` to the current generation;
    /// nothing for one pinned to another context's token, or unpinned. Called by
    /// ``refreshAllObjects()``.
    package func advanceQueryGenerationIfFollowingCurrent() {
        guard parent == nil, let pin = settings.withLock({ $0.generationPin }) else { return }
        pin.advanceIfFollowingCurrent()
    }
}

/// A pinned context's source: its coordinator, read through the context's query generation.
final class GenerationSource: ContextSource {
    let pin: QueryGenerationPin
    var coordinator: PersistentStoreCoordinator { pin.coordinator }

    init(pin: QueryGenerationPin) { self.pin = pin }

    private func pinned(_ fetch: StoreFetch) throws(CoherenceError) -> StoreFetch {
        var f = fetch
        f.generation = try pin.generation()
        return f
    }

    func sourceFetch(_ fetch: StoreFetch) throws(CoherenceError) -> [ObjectSnapshot] {
        try coordinator.sourceFetch(pinned(fetch))
    }

    func sourceFetch(_ fetch: StoreFetch, into registration: inout RowRegistration) throws(CoherenceError) {
        try coordinator.sourceFetch(pinned(fetch), into: &registration)
    }

    func sourceCount(_ fetch: StoreFetch) throws(CoherenceError) -> Int {
        try coordinator.sourceCount(pinned(fetch))
    }

    func sourceSnapshots(for ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: ObjectSnapshot] {
        try coordinator.snapshots(for: ids, in: pin.generation())
    }

    func sourceRelated(_ relationship: RelationshipDescription, of ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: [ObjectID]] {
        try coordinator.related(relationship, of: ids, in: pin.generation())
    }
}
