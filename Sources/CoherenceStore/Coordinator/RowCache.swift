import Foundation

/// The coordinator's cache of row snapshots (values and version) by object ID, shared by its
/// contexts: faults fill from it without a query, and conflicts report its snapshot.
///
/// Bounded: past `capacity` entries, the oldest half is dropped. The insertion order is a list
/// that removals leave stale IDs in; once stale IDs outnumber the cached ones it is compacted, so
/// it stays within twice the entries (plus a little) at O(1) amortised cost per removal.
package final class RowCache: Sendable {
    package struct Entry: Sendable {
        package var values: [StoredValue]
        package var version: Int64
    }

    private struct State {
        var entries: [ObjectID: Entry] = [:]
        /// IDs in the order they were cached, oldest first: every cached ID, and IDs removed
        /// (or cached again later) since the last compaction.
        var order: [ObjectID] = []
        /// Bumped when every row of a store is dropped (see ``RowCache/generation``).
        var generation: UInt64 = 0
    }

    /// Stale IDs the order list may hold beyond the number of entries before it is compacted.
    private static let staleSlack = 16

    private let state = LockedValue(State())
    package let capacity: Int

    package init(capacity: Int = 50_000) { self.capacity = capacity }

    /// The cached entry of a row, with the ID it was cached under: that ID names the row's
    /// concrete entity, which `id` (equal to it by hierarchy and key) may not.
    package func entry(for id: ObjectID) -> (id: ObjectID, entry: Entry)? {
        state.withLock { s in
            guard let i = s.entries.index(forKey: id) else { return nil }
            let (key, entry) = s.entries[i]
            return (key, entry)
        }
    }

    /// Caches a row's entry under its ID, which names the row's concrete entity. With
    /// `generation` (the cache's ``generation`` when the row was read), only if no store's rows
    /// were dropped since: another process committed meanwhile, so the row may be older.
    package func store(_ entry: Entry, for id: ObjectID, readAt generation: UInt64? = nil) {
        state.withLock { s in
            if let generation, s.generation != generation { return }
            if s.entries.updateValue(entry, forKey: id) == nil { s.order.append(id) }
            if s.entries.count > capacity { Self.trim(&s, to: capacity / 2) }
        }
    }

    /// A number that changes whenever every row of a store is dropped
    /// (``removeAll(inStore:)``): a reader takes it before reading rows from a store and caches
    /// them only if it is unchanged.
    package var generation: UInt64 { state.withLock { $0.generation } }

    /// Replaces the entries of rows that are cached (under one lock); rows not cached stay
    /// out, so a save does not fill the cache with rows nobody read.
    package func update(_ batch: [(id: ObjectID, entry: Entry)]) {
        guard !batch.isEmpty else { return }
        state.withLock { s in
            guard !s.entries.isEmpty else { return }
            for (id, entry) in batch {
                if let i = s.entries.index(forKey: id) { s.entries.values[i] = entry }
            }
        }
    }

    package func remove(_ ids: [ObjectID]) {
        state.withLock { s in
            guard !s.entries.isEmpty else { return }
            for id in ids { s.entries[id] = nil }
            // Each removal leaves a stale ID in the order list; compacting once they outnumber
            // the entries costs O(order) but is paid for by those removals.
            if s.order.count - s.entries.count > s.entries.count + Self.staleSlack { Self.compactOrder(&s) }
        }
    }

    package func removeAll(inStore identifier: UUID) {
        state.withLock { s in
            s.generation &+= 1
            s.entries = s.entries.filter { $0.key.storeIdentifier != identifier }
            s.order.removeAll { $0.storeIdentifier == identifier }
        }
    }

    package var count: Int { state.withLock { $0.entries.count } }

    package var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }

    /// The length of the insertion-order list, stale IDs included (for tests).
    package var orderCount: Int { state.withLock { $0.order.count } }

    /// Drops stale IDs from the order list: IDs no longer cached, and earlier copies of IDs that
    /// were removed and cached again (the last copy is the one that counts).
    private static func compactOrder(_ s: inout State) {
        var seen = Set<ObjectID>(minimumCapacity: s.entries.count)
        var kept: [ObjectID] = []
        kept.reserveCapacity(s.entries.count)
        for id in s.order.reversed() where s.entries[id] != nil && seen.insert(id).inserted { kept.append(id) }
        s.order = kept.reversed()
    }

    private static func trim(_ s: inout State, to target: Int) {
        var dropped = 0
        let excess = s.entries.count - target
        var i = 0
        while dropped < excess && i < s.order.count {
            if s.entries.removeValue(forKey: s.order[i]) != nil { dropped += 1 }
            i += 1
        }
        s.order.removeFirst(i)
    }
}
