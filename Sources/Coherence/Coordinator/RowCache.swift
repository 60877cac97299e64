import Foundation

/// The coordinator's cache of row snapshots (values and version) by object ID, shared by its
/// contexts: faults fill from it without a query, and conflicts report its snapshot.
///
/// Bounded: past `capacity` entries, the oldest half is dropped.
package final class RowCache: Sendable {
    package struct Entry: Sendable {
        package var values: [StoredValue]
        package var version: Int64
    }

    private struct State {
        var entries: [ObjectID: Entry] = [:]
        var order: [ObjectID] = []
    }

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

    /// Caches a row's entry under its ID, which names the row's concrete entity.
    package func store(_ entry: Entry, for id: ObjectID) {
        state.withLock { s in
            if s.entries.updateValue(entry, forKey: id) == nil { s.order.append(id) }
            if s.entries.count > capacity { Self.trim(&s, to: capacity / 2) }
        }
    }

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
        }
    }

    package func removeAll(inStore identifier: UUID) {
        state.withLock { s in
            s.entries = s.entries.filter { $0.key.storeIdentifier != identifier }
            s.order.removeAll { $0.storeIdentifier == identifier }
        }
    }

    package var count: Int { state.withLock { $0.entries.count } }

    package var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }

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
