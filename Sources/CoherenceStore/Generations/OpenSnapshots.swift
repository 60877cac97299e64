import CoherenceBase

/// A snapshot its store can end when the store closes (see ``StoreSnapshot/isDetached``).
package protocol DetachableSnapshot: StoreSnapshot {
    /// Closes the snapshot because its store closes, and marks it detached.
    func detach()
}

/// The query-generation snapshots open on one store, held weakly (their generations own them),
/// so that closing the store detaches every one of them.
package final class OpenSnapshots<Snapshot: DetachableSnapshot>: Sendable {
    private struct Entry: Sendable {
        weak var snapshot: Snapshot?
    }
    private let list = LockedValue<[Entry]>([])

    package init() {}

    /// Notes `snapshot` as open and returns true; or, when its store has closed meanwhile,
    /// detaches it and returns false. `isClosed` is read under the list's lock, and a store marks
    /// itself closed before it calls ``detachAll()``: so either that call detaches the snapshot
    /// or this one sees the store closed.
    package func note(_ snapshot: Snapshot, unlessClosed isClosed: () -> Bool) -> Bool {
        let closed = list.withLock { entries -> Bool in
            entries.removeAll { $0.snapshot == nil }
            entries.append(Entry(snapshot: snapshot))
            return isClosed()
        }
        if closed { snapshot.detach() }
        return !closed
    }

    /// Detaches every open snapshot (the store closes).
    package func detachAll() {
        let open = list.withLock { entries -> [Snapshot] in
            defer { entries = [] }
            return entries.compactMap(\.snapshot)
        }
        for s in open { s.detach() }
    }

    /// Whether no snapshot is open (for tests).
    package var isEmpty: Bool { list.withLock { $0.allSatisfy { $0.snapshot == nil } } }
}
