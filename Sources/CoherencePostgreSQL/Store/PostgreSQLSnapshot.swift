import Foundation

/// A PostgreSQL store's part of a query generation: a snapshot of the database exported by one
/// reader connection (`REPEATABLE READ READ ONLY`, `pg_export_snapshot()`), whose transaction
/// stays open until the snapshot is closed. Reads run on that connection or, when it is busy, on
/// other reader connections that imported the same snapshot (`SET TRANSACTION SNAPSHOT`): the
/// contexts sharing the generation read at once, each on a connection of its own, and all see
/// exactly the same data. Connections that imported it are kept (in their transactions) for the
/// next reads; closing ends every transaction and gives the connections back to the pool.
///
/// Each connection sets a savepoint (``savepoint``) once it is at the snapshot. A read that
/// fails on the server (a `statement_timeout`, a lock timeout) rolls back to it, so that its
/// transaction, and with the exporting connection's the snapshot itself, survives the failure.
final class PostgreSQLSnapshot: ExportedStoreSnapshot, DetachableSnapshot, @unchecked Sendable {
    // @unchecked Sendable: a connection is used by one read at a time: taken out of `state`
    // under its lock, and put back when the read is done.
    private struct State {
        /// Connections in a transaction at the snapshot, not reading now.
        var idle: [PostgreSQLConnection]
        /// Connections reading now.
        var lent = 0
        var isClosed = false
        /// Closed because its store closed (removed from the coordinator).
        var isDetached = false
    }
    private let state: LockedValue<State>
    /// The snapshot's identifier (`pg_export_snapshot()`), valid while the exporting
    /// connection's transaction is open.
    let identifier: String
    private weak var store: PostgreSQLStore?
    private let location: String
    /// The savepoint each connection at the snapshot sets once it is there.
    static let savepoint = "coherence_snapshot"

    /// Test hook: called with the store's location and the connection as each read starts on it.
    nonisolated(unsafe) static var readHook: (@Sendable (String, PostgreSQLConnection) -> Void)?

    init(exporter: PostgreSQLConnection, identifier: String, store: PostgreSQLStore) {
        self.state = LockedValue(State(idle: [exporter]))
        self.identifier = identifier
        self.store = store
        self.location = store.locationDescription
    }

    deinit { close() }

    var exportedIdentifier: String { identifier }

    /// How many connections hold the snapshot (reading or not).
    var connectionCount: Int { state.withLock { $0.idle.count + $0.lent } }

    /// Runs `body` on a connection at the snapshot: an idle one, or a reader connection that
    /// imports it. A connection whose read failed on the server goes back to its savepoint, or
    /// leaves the snapshot when it cannot (its transaction is over).
    /// - Throws: `.invalidQueryGenerationToken` once the snapshot is closed.
    func read<T>(_ body: (PostgreSQLConnection) throws(CoherenceError) -> T) throws(CoherenceError) -> T {
        let c = try take()
        Self.readHook?(location, c)
        do {
            let value = try body(c)
            giveBack(c, failed: false)
            return value
        } catch {
            giveBack(c, failed: true)
            throw error
        }
    }

    /// An idle connection at the snapshot, or a new one that imported it.
    private func take() throws(CoherenceError) -> PostgreSQLConnection {
        let taken = state.withLock { s -> (PostgreSQLConnection?, Bool) in
            guard !s.isClosed else { return (nil, true) }
            s.lent += 1
            return (s.idle.popLast(), false)
        }
        if taken.1 { throw QueryGeneration.releasedError(store: location) }
        if let c = taken.0 { return c }
        guard let store else {
            state.withLock { $0.lent -= 1 }
            throw QueryGeneration.releasedError(store: location)
        }
        let c: PostgreSQLConnection
        do {
            c = try store.takeReader()
        } catch {
            state.withLock { $0.lent -= 1 }
            throw error
        }
        do {
            try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try c.execute(
                "SET TRANSACTION SNAPSHOT \(SQLGenerator(dialect: .postgreSQL).literal(.text(identifier))); SAVEPOINT \(Self.savepoint)")
            return c
        } catch {
            state.withLock { $0.lent -= 1 }
            finish(c)
            throw store.storeError(.storeReadFailed, error, "Reading the query generation's snapshot failed")
        }
    }

    /// Keeps a connection for the next reads, or ends its transaction when the snapshot is
    /// closed or its read failed on the server and it cannot go back to its savepoint (a read
    /// that failed in the client, the transaction intact, keeps it).
    private func giveBack(_ c: PostgreSQLConnection, failed: Bool) {
        if failed, c.isOpen, c.isInTransaction, !c.isInHealthyTransaction {
            _ = try? c.execute("ROLLBACK TO SAVEPOINT \(Self.savepoint)")
        }
        let kept = state.withLock { s -> Bool in
            s.lent -= 1
            guard !s.isClosed && c.isOpen && (failed ? c.isInHealthyTransaction : c.isInTransaction) else { return false }
            s.idle.append(c)
            return true
        }
        if !kept { finish(c) }
    }

    /// Ends a connection's transaction and gives it back to the store's pool.
    private func finish(_ c: PostgreSQLConnection) {
        if c.isInTransaction { _ = try? c.execute("ROLLBACK") }
        if let store, !c.isInTransaction { store.returnReader(c) } else { c.close() }
    }

    /// Whether its store closed it (the store was removed from the coordinator): a generation
    /// then reads that store, if attached again, as it is now.
    var isDetached: Bool { state.withLock { $0.isDetached } }

    /// Closes it because its store closes.
    func detach() {
        state.withLock { $0.isDetached = true }
        close()
    }

    func close() {
        let idle = state.withLock { s -> [PostgreSQLConnection] in
            s.isClosed = true
            defer { s.idle.removeAll() }
            return s.idle
        }
        for c in idle { finish(c) }
    }
}

extension PostgreSQLStore {
    /// Notes `snapshot` as open, to detach it when the store closes.
    /// - Throws: `.storeNotAttached` when the store closed while the snapshot was being opened
    ///   (the snapshot is detached: its transaction ends).
    func noteOpen(_ snapshot: PostgreSQLSnapshot) throws(CoherenceError) -> PostgreSQLSnapshot {
        openSnapshotHook.withLock { $0 }?()
        guard openSnapshots.note(snapshot, unlessClosed: { readersClosed }) else {
            throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription)
        }
        return snapshot
    }
}

extension PostgreSQLStore: SnapshotImporting {
    package var supportsSnapshots: Bool { true }

    package var journalModeDescription: String { "postgresql" }

    /// Begins a `REPEATABLE READ` transaction on a reader connection and exports its snapshot
    /// (which fixes what it sees), so that other connections can read at the same snapshot.
    package func openSnapshot() throws(CoherenceError) -> any StoreSnapshot {
        let c = try takeReader()
        let snapshot: PostgreSQLSnapshot
        do {
            // (Exported before the savepoint: PostgreSQL exports no snapshot from a subtransaction.)
            let exported = try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT pg_export_snapshot()")
            guard case .text(let identifier)? = exported.rows.first?.first else {
                throw PostgreSQLError(message: "The server exported no snapshot.", location: locationDescription)
            }
            try c.execute("SAVEPOINT \(PostgreSQLSnapshot.savepoint)")
            snapshot = PostgreSQLSnapshot(exporter: c, identifier: identifier, store: self)
        } catch {
            c.close()
            throw storeError(.storeReadFailed, error, "Opening a snapshot failed")
        }
        return try noteOpen(snapshot)
    }

    /// Begins a `REPEATABLE READ` transaction on a reader connection at a snapshot another
    /// connection exported (another coordinator's, while it holds it); other connections of
    /// this store import it the same way when reads overlap.
    /// - Throws: `.invalidQueryGenerationToken` when the snapshot is no longer held.
    package func openSnapshot(importing identifier: String) throws(CoherenceError) -> any StoreSnapshot {
        let c = try takeReader()
        let snapshot: PostgreSQLSnapshot
        do {
            try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try c.execute("SET TRANSACTION SNAPSHOT \(generator.literal(.text(identifier))); SAVEPOINT \(PostgreSQLSnapshot.savepoint)")
            snapshot = PostgreSQLSnapshot(exporter: c, identifier: identifier, store: self)
        } catch {
            c.close()
            var e = CoherenceError(
                .invalidQueryGenerationToken, "The exported snapshot \(identifier) is no longer held: \(error.message)",
                store: locationDescription, sql: error.sql)
            e.underlyingErrors = [error]
            throw e
        }
        return try noteOpen(snapshot)
    }
}
