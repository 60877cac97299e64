/// An in-memory store's part of a query generation: its committed tables as they were when the
/// generation was pinned. Taking it copies nothing (the tables are copy-on-write: the store's
/// next save copies what it changes, as every save does); closing drops it.
final class MemorySnapshot: StoreSnapshot {
    private let kept: LockedValue<InMemoryStore.State?>

    init(_ state: InMemoryStore.State) { self.kept = LockedValue(state) }

    /// The kept state, or nil once closed.
    var state: InMemoryStore.State? { kept.withLock { $0 } }

    func close() { kept.withLock { $0 = nil } }
}

extension InMemoryStore {
    package var supportsSnapshots: Bool { true }

    package var journalModeDescription: String { "memory" }

    package func openSnapshot() throws(CoherenceError) -> any StoreSnapshot {
        try state.withLock { (s: inout State) throws(CoherenceError) -> any StoreSnapshot in
            guard !s.isClosed else {
                throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription)
            }
            var committed = Self.committed(s)
            // History is not read through a generation.
            committed.history = HistoryState()
            committed.unique = [:]
            return MemorySnapshot(committed)
        }
    }
}
