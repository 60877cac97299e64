import Foundation

/// A PostgreSQL store's part of a query generation: a reader connection holding a
/// `REPEATABLE READ` transaction open (begun and read once), so that every read on it sees the
/// database as it was then. The contexts sharing the generation share the connection, one read
/// at a time. Closing ends the transaction and gives the connection back to the pool.
final class PostgreSQLSnapshot: StoreSnapshot, @unchecked Sendable {
    // @unchecked Sendable: the connection is used only inside `connection.withLock`.
    private let connection: LockedValue<PostgreSQLConnection?>
    private weak var store: PostgreSQLStore?
    private let location: String

    init(_ connection: PostgreSQLConnection, store: PostgreSQLStore) {
        self.connection = LockedValue(connection)
        self.store = store
        self.location = store.locationDescription
    }

    deinit { close() }

    /// Runs `body` on the snapshot's connection.
    /// - Throws: `.invalidQueryGenerationToken` once the snapshot is closed.
    func read<T>(_ body: (PostgreSQLConnection) throws(CoherenceError) -> T) throws(CoherenceError) -> T {
        try connection.withLock { (c: inout PostgreSQLConnection?) throws(CoherenceError) -> T in
            guard let c else { throw QueryGeneration.releasedError(store: location) }
            return try body(c)
        }
    }

    func close() {
        let c = connection.withLock { c -> PostgreSQLConnection? in
            defer { c = nil }
            return c
        }
        guard let c else { return }
        if c.isInTransaction { _ = try? c.execute("COMMIT") }
        if let store, !c.isInTransaction { store.returnReader(c) } else { c.close() }
    }
}

extension PostgreSQLStore {
    package var supportsSnapshots: Bool { true }

    package var journalModeDescription: String { "postgresql" }

    /// Begins a `REPEATABLE READ` transaction on a reader connection and reads once, which fixes
    /// the snapshot its reads see until it is closed.
    package func openSnapshot() throws(CoherenceError) -> any StoreSnapshot {
        let c = try takeReader()
        do {
            try c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try c.execute("SELECT 1")
        } catch {
            c.close()
            throw storeError(.storeReadFailed, error, "Opening a snapshot failed")
        }
        return PostgreSQLSnapshot(c, store: self)
    }
}
