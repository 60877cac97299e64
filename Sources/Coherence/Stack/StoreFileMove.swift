import Foundation

/// Moves a SQLite store — its main file and its `-wal` and `-shm` companions — so that a move
/// stopped at any point (a crash, a killed process) is finished by the next one, and never
/// loses what the write-ahead log holds.
///
/// The companions go first and the main file last: while the main file is at the old location
/// the move has not finished, and a companion already at the new location is a leftover of
/// that move (replaced). The main file arrives whole under its name (moved to a temporary name
/// beside it, then renamed), so a main file at the new location means every file before it
/// arrived. A main file at the new location with companions still at the old one (a move that
/// moved the main file first, as Coherence did before) takes the companions it lacks.
enum StoreFileMove {
    /// The companions of a store file, in the order they are moved.
    static let companionSuffixes = ["-wal", "-shm"]

    /// Moves the store at `old` to `new` (see the type's description); nothing when there is no
    /// store at `old` and nothing left of a move to finish.
    /// - Throws: `.storeOpenFailed` naming the file that could not be moved or removed.
    static func move(from old: URL, to new: URL) throws(CoherenceError) {
        let files = FileManager.default
        guard old.standardizedFileURL != new.standardizedFileURL else { return }
        if files.fileExists(atPath: old.path) {
            if files.fileExists(atPath: new.path) {
                // The move finished but for removing the old files.
                try remove(old, [""] + companionSuffixes)
                return
            }
            try StoreLocation.createDirectory(new.deletingLastPathComponent())
            var moved: [String] = []
            do throws(CoherenceError) {
                for suffix in companionSuffixes {
                    if try moveFile(old, new, suffix, replacing: true) { moved.append(suffix) }
                }
                try moveFile(old, new, "", replacing: false)
            } catch {
                // Put back what was moved: the store stays whole at the old location.
                for suffix in moved.reversed() { try? files.moveItem(atPath: new.path + suffix, toPath: old.path + suffix) }
                throw error
            }
        } else if files.fileExists(atPath: new.path) {
            if !files.fileExists(atPath: new.path + "-wal") {
                // A move that stopped after the main file: its companions follow it.
                for suffix in companionSuffixes where !files.fileExists(atPath: new.path + suffix) {
                    try moveFile(old, new, suffix, replacing: false)
                }
            } else if !files.fileExists(atPath: old.path + "-wal") {
                // One that stopped before the `-shm` (SQLite makes a new one).
                try remove(old, ["-shm"])
            }
            // (A `-wal` at both locations: the store was opened at the new one since; the old
            // files are left as they are.)
        }
    }

    /// Moves `old + suffix` (when there) to `new + suffix`, replacing a file there when
    /// `replacing`. The file arrives under its name whole: it is moved to a temporary name in
    /// the new directory first (a move between file systems copies), then renamed.
    /// - Returns: whether there was a file to move.
    @discardableResult
    private static func moveFile(_ old: URL, _ new: URL, _ suffix: String, replacing: Bool) throws(CoherenceError) -> Bool {
        let files = FileManager.default
        let from = old.path + suffix, to = new.path + suffix
        guard files.fileExists(atPath: from) else { return false }
        guard replacing || !files.fileExists(atPath: to) else {
            throw CoherenceError(.storeOpenFailed, "The store file \(from) could not be moved to \(to): a file is there.", store: old.path)
        }
        let moving = to + ".coherence-moving"
        do {
            if files.fileExists(atPath: moving) { try files.removeItem(atPath: moving) }
            try files.moveItem(atPath: from, toPath: moving)
        } catch {
            throw CoherenceError(
                .storeOpenFailed, "The store file \(from) could not be moved to \(to): \(error.localizedDescription)", store: old.path)
        }
        guard rename(moving, to) == 0 else {
            let reason = String(cString: strerror(errno))
            try? files.moveItem(atPath: moving, toPath: from)
            throw CoherenceError(.storeOpenFailed, "The store file \(from) could not be moved to \(to): \(reason).", store: old.path)
        }
        return true
    }

    /// Removes `url + suffix` for each suffix.
    private static func remove(_ url: URL, _ suffixes: [String]) throws(CoherenceError) {
        for path in suffixes.map({ url.path + $0 }) where FileManager.default.fileExists(atPath: path) {
            do { try FileManager.default.removeItem(atPath: path) } catch {
                throw CoherenceError(
                    .storeOpenFailed, "The old store file \(path) could not be removed: \(error.localizedDescription)", store: url.path)
            }
        }
    }
}
