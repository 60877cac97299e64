/// What one context holds of a query generation: nothing yet (``QueryGenerationToken/current``,
/// pinned at the next read) or one generation, held until the context advances, unpins or goes
/// away (`deinit` lets go).
package final class QueryGenerationPin: Sendable {
    package let coordinator: PersistentStoreCoordinator
    private let held: LockedValue<QueryGeneration?>
    /// Whether the pin follows the current generation: set with `.current`, or moved on since
    /// (a save, reset or merge); false while it holds another context's token.
    private let followsCurrent: LockedValue<Bool>

    /// A pin to the generation current at the first read.
    package init(currentOf coordinator: PersistentStoreCoordinator) {
        self.coordinator = coordinator
        self.held = LockedValue(nil)
        self.followsCurrent = LockedValue(true)
    }

    /// A pin to the generation `token` names (held once more), or, for a token of another
    /// coordinator that carries exported snapshots, to a new generation at those snapshots.
    /// - Throws: `.invalidQueryGenerationToken` (another coordinator's without exported
    ///   snapshots of every store, or released).
    package init(_ token: QueryGenerationToken, of coordinator: PersistentStoreCoordinator) throws(CoherenceError) {
        self.coordinator = coordinator
        if case .snapshot(let registry, _) = token.kind, registry != coordinator.queryGenerations.identifier,
            !token.exportedSnapshots.isEmpty
        {
            self.held = LockedValue(try coordinator.importQueryGeneration(token))
        } else {
            self.held = LockedValue(try coordinator.queryGenerations.retain(token))
        }
        self.followsCurrent = LockedValue(false)
    }

    deinit {
        if let g = held.withLock({ $0 }) { coordinator.queryGenerations.release(g) }
    }

    /// The token of the held generation, or ``QueryGenerationToken/current`` before the first read.
    package var token: QueryGenerationToken { held.withLock { $0?.token ?? .current } }

    /// The generation to read: the held one, or (before the first read, or when the held one
    /// was released for being idle) a new one of every store as it is now.
    package func generation() throws(CoherenceError) -> QueryGeneration {
        try held.withLock { (g: inout QueryGeneration?) throws(CoherenceError) -> QueryGeneration in
            if let current = g {
                if !current.isReleased {
                    current.noteUse(at: coordinator.queryGenerations.now())
                    return current
                }
                coordinator.queryGenerations.release(current)
                g = nil
            }
            let fresh = try coordinator.pinQueryGeneration()
            g = fresh
            return fresh
        }
    }

    /// Lets the held generation go if the pin follows the current generation (see
    /// ``advance()``); nothing for a pin that holds another context's token.
    package func advanceIfFollowingCurrent() {
        if followsCurrent.withLock({ $0 }) { advance() }
    }

    /// Lets the held generation go: the next read pins the generation current then.
    package func advance() {
        followsCurrent.withLock { $0 = true }
        let old = held.withLock { g -> QueryGeneration? in
            defer { g = nil }
            return g
        }
        if let old { coordinator.queryGenerations.release(old) }
    }
}
