import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A copy of a SQLite store that a staged migration works on, so that the store itself changes
/// only once every stage succeeded: the finished copy then takes the store's place with one
/// `rename(2)`, which a process killed at any moment sees done or not done. A failed migration
/// discards the copy and the store was never written.
///
/// The copy is `<store>-migrating` next to the store (same file system, so the rename is atomic);
/// one left by a process that died is deleted when the next copy is made.
///
/// Another connection (another process) may still write to the store while the copy is migrated:
/// the connection that made the copy stays open on the store, and a store that changed since
/// (`PRAGMA data_version`) is not replaced, so that no save is lost.
///
/// One staged migration of a store runs at a time, in any process: the copy holds a lock
/// (``MigrationLock``: in this process, per store; across processes, an exclusive `flock(2)` on
/// the store's directory) from before it is made until it is dropped, and a second migration
/// waits for it (then finds the store migrated, or migrates it). Two at once deleted each other's
/// copy, and one then put an empty file in the store's place.
package struct MigrationCopy {
    /// The store the copy is of.
    package let original: URL
    /// The copy.
    package let url: URL
    /// The connection on the store that made the copy, kept open until the copy replaces it.
    private var connection: SQLiteConnection?
    /// The store's `PRAGMA data_version` on ``connection`` before the copy was made.
    private var dataVersion: Int64 = 0
    /// The lock that keeps other migrations of the store out.
    private var lock: MigrationLock?

    /// Test hook: called when another migration holds the lock, before waiting for it.
    nonisolated(unsafe) package static var lockWaitHook: (() -> Void)?

    private init(original: URL, url: URL) {
        self.original = original
        self.url = url
    }

    /// The copy's location for a store.
    package static func location(of original: URL) -> URL {
        original.deletingLastPathComponent().appendingPathComponent(original.lastPathComponent + "-migrating")
    }

    /// Makes a consistent copy of the store at `original` (its write-ahead log included) with
    /// `VACUUM INTO`, owner-only like the store. The store is only read.
    /// - Throws: `.migrationFailed` naming the store when it cannot be read or copied.
    package static func make(of original: URL) throws(CoherenceError) -> MigrationCopy {
        var copy = MigrationCopy(original: original, url: location(of: original))
        let path = original.path
        copy.lock = try MigrationLock(directory: original.deletingLastPathComponent().path, store: path, waiting: lockWaitHook)
        copy.discard()
        do {
            try OwnerOnlyFiles.createFile(atPath: copy.url.path)
            let connection = try SQLiteConnection(location: .file(path), switchesToWAL: false)
            // Read before the copy: a commit between this and the copy's snapshot counts as a change.
            copy.dataVersion = try Self.dataVersion(connection)
            let vacuum = try connection.prepare("VACUUM INTO ?")
            vacuum.bind(copy.url.path, at: 1)
            try vacuum.execute()
            copy.connection = connection
        } catch {
            copy.discard()
            throw failure("Cannot copy the store for its migration: \(error)", path: path, error)
        }
        return copy
    }

    /// Puts the copy in the store's place: the copy is made self-contained (no write-ahead log),
    /// the store's own log is checkpointed into the store and removed, then the copy is renamed
    /// over the store.
    /// Until the rename the store is complete at its old version; after it, at the new one.
    /// - Throws: `.migrationFailed` (the store is left at its old version, the copy discarded),
    ///   when another connection holds the store open, or wrote to it since the copy was made.
    package func replaceOriginal() throws(CoherenceError) {
        let path = original.path
        do {
            for file in [url.path, path] {
                // Rollback journal mode checkpoints and deletes the log; it needs the only connection
                // (for the store, the one that made the copy).
                let connection =
                    try file == path
                    ? self.connection ?? SQLiteConnection(location: .file(file), switchesToWAL: false)
                    : SQLiteConnection(location: .file(file), switchesToWAL: false)
                let before = try connection.prepare("PRAGMA journal_mode").rows { $0.string(0) }.first?.lowercased() ?? "delete"
                let mode = try connection.prepare("PRAGMA journal_mode=DELETE").rows { $0.string(0) }.first?.lowercased()
                guard mode == "delete" else {
                    throw CoherenceError(.migrationFailed, "The store is in use by another connection; it was not migrated.", store: path)
                }
                // No commit can come between the switch (the only connection) and this look.
                if file == path, let held = self.connection, try Self.dataVersion(held) != dataVersion {
                    // The journal mode it had (the only connection still: no commit came since).
                    if before == "wal" { try held.switchToWAL() } else { try held.execute("PRAGMA journal_mode=\(before)") }
                    throw CoherenceError(
                        .migrationFailed,
                        "Another connection wrote to the store while it was migrated; it was not migrated (opening it again migrates it with that change).",
                        store: path)
                }
            }
            for suffix in ["-wal", "-shm", "-journal"] {
                try? FileManager.default.removeItem(atPath: url.path + suffix)
                try? FileManager.default.removeItem(atPath: path + suffix)
            }
            Self.synchronize(url.path, flags: O_RDONLY)
            guard rename(url.path, path) == 0 else {
                throw CoherenceError(
                    .migrationFailed, "Cannot put the migrated store in place: \(String(cString: strerror(errno))).", store: path)
            }
            Self.synchronize(original.deletingLastPathComponent().path, flags: O_RDONLY | O_DIRECTORY)
        } catch {
            discard()
            throw Self.failure("Cannot put the migrated store in place: \(error)", path: path, error)
        }
    }

    /// The database's `PRAGMA data_version` as `connection` sees it: it changes when another
    /// connection commits.
    private static func dataVersion(_ connection: SQLiteConnection) throws -> Int64 {
        try connection.prepare("PRAGMA data_version").rows { $0.int64(0) }.first ?? 0
    }

    /// Deletes the copy and its journal files, if any.
    package func discard() {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
    }

    /// The right to migrate one store, held until the last copy of its ``MigrationCopy`` is
    /// dropped.
    ///
    /// In this process, one migration of a store runs at a time (the others wait). Across
    /// processes, an exclusive `flock(2)` on the store's directory, which the first migration of
    /// this process in that directory takes and the last one releases: another process's
    /// migrations there wait for it, but this process's migrations of other stores in the
    /// directory (a stage handler's, say) share it instead of waiting for themselves. The
    /// directory, not the store: closing a descriptor of the store would drop SQLite's own
    /// (POSIX) locks on it in this process.
    /// `@unchecked Sendable` is safe: its state is two strings set once in `init`; the shared
    /// state is behind ``state``'s lock.
    private final class MigrationLock: @unchecked Sendable {
        private let store: String
        private let directory: String

        /// The directories this process holds locked and the stores it migrates.
        private struct State {
            struct Directory {
                var descriptor: Int32 = -1
                var users = 0
                /// A thread of this process is taking the `flock`: the others wait for it.
                var acquiring = false
            }
            var directories: [String: Directory] = [:]
            var stores: Set<String> = []
            /// Threads waiting for a store or a directory; all are woken at each release (each
            /// then looks again).
            var waiters: [DispatchSemaphore] = []

            mutating func wakeAll() {
                for w in waiters { w.signal() }
                waiters = []
            }
        }
        private static let state = LockedValue(State())

        /// Takes the lock, waiting while another migration of the store (in any process), or
        /// another process's migration in the directory, holds it; `waiting` is called first
        /// when it does.
        /// - Throws: `.migrationFailed` naming `store` when the directory cannot be opened or locked.
        init(directory: String, store: String, waiting: (() -> Void)?) throws(CoherenceError) {
            self.store = store
            self.directory = directory
            var announced = false
            func wait(_ semaphore: DispatchSemaphore) {
                if !announced { waiting?() }
                announced = true
                semaphore.wait()
            }
            // The store, in this process.
            while let semaphore = Self.state.withLock({ s -> DispatchSemaphore? in
                if s.stores.insert(store).inserted { return nil }
                let w = DispatchSemaphore(value: 0)
                s.waiters.append(w)
                return w
            }) {
                wait(semaphore)
            }
            // The directory, across processes.
            while true {
                let next = Self.state.withLock { s -> DispatchSemaphore?? in
                    var d = s.directories[directory] ?? State.Directory()
                    if d.users > 0 {
                        d.users += 1
                        s.directories[directory] = d
                        return .some(nil)  // shared with this process's other migrations there
                    }
                    if d.acquiring {
                        let w = DispatchSemaphore(value: 0)
                        s.waiters.append(w)
                        return .some(w)
                    }
                    d.acquiring = true
                    s.directories[directory] = d
                    return .none  // this thread takes it
                }
                switch next {
                case .some(nil): return
                case .some(let semaphore?): wait(semaphore)
                case .none:
                    let descriptor: Int32
                    do throws(CoherenceError) {
                        descriptor = try Self.lockDirectory(directory, store: store) {
                            if !announced { waiting?() }
                            announced = true
                        }
                    } catch {
                        Self.state.withLock { s in
                            s.directories[directory] = nil
                            s.stores.remove(store)
                            s.wakeAll()
                        }
                        throw error
                    }
                    Self.state.withLock { s in
                        s.directories[directory] = State.Directory(descriptor: descriptor, users: 1, acquiring: false)
                        s.wakeAll()
                    }
                    return
                }
            }
        }

        deinit {
            let directory = self.directory, store = self.store
            Self.state.withLock { s in
                s.stores.remove(store)
                if var d = s.directories[directory] {
                    d.users -= 1
                    if d.users <= 0 {
                        close(d.descriptor)
                        s.directories[directory] = nil
                    } else {
                        s.directories[directory] = d
                    }
                }
                s.wakeAll()
            }
        }

        /// Opens `path` and takes an exclusive `flock` on it, calling `waiting` first when
        /// another process holds it; returns the descriptor that holds it.
        private static func lockDirectory(_ path: String, store: String, waiting: () -> Void) throws(CoherenceError) -> Int32 {
            let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw CoherenceError(
                    .migrationFailed,
                    "Cannot open the store's directory to lock it for the migration: \(String(cString: strerror(errno))).",
                    store: store)
            }
            if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                waiting()
                while flock(descriptor, LOCK_EX) != 0 {
                    guard errno == EINTR else {
                        let message = String(cString: strerror(errno))
                        close(descriptor)
                        throw CoherenceError(
                            .migrationFailed, "Cannot lock the store's directory for the migration: \(message).", store: store)
                    }
                }
            }
            return descriptor
        }
    }

    /// Flushes a file or directory to the disk (best effort).
    private static func synchronize(_ path: String, flags: Int32) {
        let fd = open(path, flags | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// `.migrationFailed` for `error`, unless it is already a ``CoherenceError``.
    private static func failure(_ message: String, path: String, _ error: any Error) -> CoherenceError {
        if let e = error as? CoherenceError { return e }
        var e = CoherenceError(.migrationFailed, message, store: path, sql: (error as? SQLiteError)?.sql)
        if let sqlite = error as? SQLiteError { e.underlyingErrors = [sqlite] }
        return e
    }
}
