import Foundation
import Synchronization

/// A SQLite store's part of a query generation: a reader connection holding a read transaction
/// open (`BEGIN` and a first read), so that every read on it sees the file as it was then. The
/// contexts sharing the generation share the connection, one read at a time. Closing ends the
/// transaction and gives the connection back to the pool.
final class SQLiteSnapshot: DetachableSnapshot, @unchecked Sendable {
    // @unchecked Sendable: the connection is used only inside `connection.withLock`.
    private let connection: LockedValue<ConnectionBox?>
    private weak var store: SQLiteStore?
    private let path: String
    /// Set when the store closed it (it was removed from the coordinator).
    private let detached = Atomic<Bool>(false)

    var isDetached: Bool { detached.load(ordering: .relaxed) }

    /// Closes it because its store closes.
    func detach() {
        detached.store(true, ordering: .relaxed)
        close()
    }

    init(_ box: ConnectionBox, store: SQLiteStore) {
        self.connection = LockedValue(box)
        self.store = store
        self.path = store.path
    }

    deinit { close() }

    /// Runs `body` on the snapshot's connection.
    /// - Throws: `.invalidQueryGenerationToken` once the snapshot is closed.
    func read<T>(_ body: (SQLiteConnection) throws(CoherenceError) -> T) throws(CoherenceError) -> T {
        try connection.withLock { (box: inout ConnectionBox?) throws(CoherenceError) -> T in
            guard let c = box?.connection else { throw QueryGeneration.releasedError(store: path) }
            return try body(c)
        }
    }

    func close() {
        let box = connection.withLock { box -> ConnectionBox? in
            defer { box = nil }
            return box
        }
        guard let box, let c = box.connection else { return }
        // The read transaction ends; the connection serves other reads again.
        if c.isInTransaction { try? c.execute("COMMIT") }
        if !c.isInTransaction { store?.returnReader(box) }
    }
}

extension SQLiteStore {
    package var supportsSnapshots: Bool { journalMode == "wal" }

    package var journalModeDescription: String { journalMode.isEmpty ? "unknown" : journalMode }

    /// Opens a read transaction on a reader connection and reads once, which fixes the
    /// snapshot it sees (WAL: later commits are not visible to it, and do not wait for it).
    package func openSnapshot() throws(CoherenceError) -> any StoreSnapshot {
        guard supportsSnapshots else {
            throw CoherenceError(
                .queryGenerationsUnsupported, "The store cannot hold a query generation: it is not in WAL mode.", store: path)
        }
        let box = try takeReader()
        guard let c = box.connection else {
            throw CoherenceError(.storeNotAttached, "The store has been closed.", store: path)
        }
        do {
            try readingStore {
                try c.execute("BEGIN DEFERRED")
                _ = try c.cachedStatement(generator.metadataTableExists).rows { $0.int64(0) }
            }
        } catch {
            if c.isInTransaction { try? c.execute("ROLLBACK") }
            returnReader(box)
            throw error
        }
        let snapshot = SQLiteSnapshot(box, store: self)
        guard openSnapshots.note(snapshot, unlessClosed: { readersClosed }) else {
            throw CoherenceError(.storeNotAttached, "The store has been closed.", store: path)
        }
        return snapshot
    }

    /// Runs `body` on `snapshot`'s connection when it is a snapshot of this store, else on a
    /// reader connection from the pool.
    func withReader<T>(_ snapshot: (any StoreSnapshot)?, _ body: (SQLiteConnection) throws -> T) throws(CoherenceError) -> T {
        guard let snapshot = snapshot as? SQLiteSnapshot else { return try withReader(body) }
        return try snapshot.read { (c) throws(CoherenceError) -> T in try readingStore { () throws -> T in try body(c) } }
    }
}
