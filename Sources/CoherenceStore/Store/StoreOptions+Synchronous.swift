import Foundation

extension StoreOptions {
    /// How much a SQLite store waits for the disk when it saves: SQLite's `PRAGMA synchronous`
    /// (the store's journal is always WAL). An in-memory store has no disk and ignores it.
    ///
    /// ```swift
    /// try coordinator.addPersistentStore(type: .sqlite, at: url, options: StoreOptions(synchronous: .full))
    /// ```
    public struct Synchronous: Hashable, Sendable, CustomStringConvertible {
        private enum Level: Hashable, Sendable { case normal, full }
        private let level: Level

        /// The default, `synchronous=NORMAL`: every save that returned survives the process
        /// crashing or being killed; after a power loss or an operating-system crash the last
        /// saves before it may be lost (the store stays consistent: whole saves are lost, never
        /// parts). Saves do not wait for the disk, except at checkpoints.
        public static let normal = Synchronous(level: .normal)
        /// `synchronous=FULL`: every save that returned survives a power loss or an
        /// operating-system crash too. Each save waits until its changes are on the disk (one
        /// `fsync` of the write-ahead log per save), which makes small saves slower.
        public static let full = Synchronous(level: .full)

        /// The connection setting for this level.
        var connectionSetting: SQLiteConnection.Synchronous {
            switch level {
            case .normal: return .normal
            case .full: return .full
            }
        }

        /// `normal` or `full`.
        public var description: String { level == .normal ? "normal" : "full" }
    }
}
