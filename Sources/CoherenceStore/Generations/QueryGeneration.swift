import Foundation

/// A pinned query generation: one snapshot of each store of a coordinator, shared by every
/// context that holds it (``QueryGenerationPin``), and released when the last one lets go or it
/// stays unused too long (``QueryGenerationRegistry``).
package final class QueryGeneration: Sendable {
    /// The token that names it.
    package let token: QueryGenerationToken
    /// Its number in the registry.
    let number: UInt64
    /// The snapshots by store identifier; set once, when the generation is made.
    private let snapshots: [UUID: any StoreSnapshot]
    private let state: LockedValue<State>

    struct State {
        /// The pins holding the generation.
        var holders = 1
        /// When a read last went through it (the registry's clock).
        var lastUsed: UInt64
        var isReleased = false
    }

    init(registry: UUID, number: UInt64, snapshots: [UUID: any StoreSnapshot], now: UInt64) {
        self.token = QueryGenerationToken(
            .snapshot(coordinator: registry, number: number),
            exportedSnapshots: snapshots.compactMapValues { ($0 as? any ExportedStoreSnapshot)?.exportedIdentifier })
        self.number = number
        self.snapshots = snapshots
        self.state = LockedValue(State(lastUsed: now))
    }

    /// The snapshot of a store, or nil for a store attached after the generation was pinned
    /// (read as it is now) — a store removed since and attached again included: its snapshot
    /// closed with it.
    package func snapshot(of store: UUID) -> (any StoreSnapshot)? {
        guard let s = snapshots[store], !s.isDetached else { return nil }
        return s
    }

    /// Whether the generation was released (its snapshots closed).
    package var isReleased: Bool { state.withLock { $0.isReleased } }

    /// Records a read through the generation at `now`.
    func noteUse(at now: UInt64) { state.withLock { $0.lastUsed = now } }

    /// One more holder; false when it is released already.
    func retain() -> Bool {
        state.withLock { s in
            guard !s.isReleased else { return false }
            s.holders += 1
            return true
        }
    }

    /// One holder fewer; true when that was the last: the generation is released then, and
    /// the caller closes its snapshots.
    func dropHolder() -> Bool {
        state.withLock { s in
            guard !s.isReleased else { return false }
            s.holders -= 1
            if s.holders > 0 { return false }
            s.isReleased = true
            return true
        }
    }

    /// Whether it was last used before `time` and is still held.
    func isIdle(since time: UInt64) -> Bool {
        state.withLock { !$0.isReleased && $0.lastUsed < time }
    }

    /// Marks it released whoever holds it; true the first time (the caller closes its snapshots).
    func markReleased() -> Bool {
        state.withLock { s in
            defer { s.isReleased = true }
            return !s.isReleased
        }
    }

    /// Closes every snapshot.
    func closeSnapshots() {
        for s in snapshots.values { s.close() }
    }

    /// The error for a read through a released generation.
    package static func releasedError(store: String?) -> CoherenceError {
        CoherenceError(
            .invalidQueryGenerationToken, "The query generation was released; its snapshot can no longer be read.", store: store)
    }
}
