import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Creates store directories and files that only their owner can use, from the moment they
/// exist, whatever the process umask.
///
/// The mode is given to `mkdir` and `open` themselves (a umask can only narrow it), and then
/// set exactly on what was just created (a umask such as `0277` would otherwise leave the owner
/// unable to write). Nothing is ever created with a wider mode and narrowed later, and the
/// process umask is never changed (it is shared by every thread). SQLite creates a store's
/// `-wal` and `-shm` files with the main file's mode, so they are owner-only from their first
/// moment too.
package enum OwnerOnlyFiles {
    /// The mode of store directories: `rwx------`.
    package static let directoryMode: mode_t = 0o700
    /// The mode of store files: `rw-------`.
    package static let fileMode: mode_t = 0o600

    /// Test hook: called with the path of each directory and file this type creates, right
    /// after the call that created it and before anything else is done to it.
    package static let creationObserver = LockedValue<(@Sendable (String) -> Void)?>(nil)

    private static func didCreate(_ path: String) {
        if let observe = creationObserver.withLock({ $0 }) { observe(path) }
    }

    private static var lastError: String { String(cString: strerror(errno)) }

    /// Creates `directory` and its missing parents, each with mode 0700 from the start
    /// (existing ones are left as they are).
    /// - Throws: `.invalidLocation` when a component exists and is not a directory, or cannot
    ///   be created.
    package static func createDirectory(_ directory: URL) throws(CoherenceError) {
        let target = directory.path
        var path = ""
        for component in directory.standardizedFileURL.path.split(separator: "/", omittingEmptySubsequences: true) {
            path += "/" + component
            var info = stat()
            if stat(path, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw CoherenceError(.invalidLocation, "\(path) exists and is not a directory.", store: target)
                }
                continue
            }
            if mkdir(path, directoryMode) != 0 {
                let failure = errno
                // Made meanwhile by someone else: fine if it is a directory.
                if failure == EEXIST, stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { continue }
                errno = failure
                throw CoherenceError(.invalidLocation, "Cannot create the directory \(path): \(lastError).", store: target)
            }
            didCreate(path)
            try setExactMode(path, directoryMode, flags: O_RDONLY | O_DIRECTORY, store: target)
        }
    }

    /// Creates an empty file at `path` with mode 0600 from the start, unless something exists
    /// there already. Returns whether it created the file.
    /// - Throws: `.storeOpenFailed` when the file cannot be created.
    @discardableResult
    static func createFile(atPath path: String) throws(CoherenceError) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, fileMode)
        guard fd >= 0 else {
            if errno == EEXIST { return false }
            throw CoherenceError(.storeOpenFailed, "Cannot create the store file: \(lastError).", store: path)
        }
        defer { close(fd) }
        didCreate(path)
        guard fchmod(fd, fileMode) == 0 else {
            throw CoherenceError(.storeOpenFailed, "Cannot set the store file's permissions: \(lastError).", store: path)
        }
        return true
    }

    /// Sets exactly `mode` on the directory just created at `path` (not following a symbolic
    /// link put in its place).
    private static func setExactMode(_ path: String, _ mode: mode_t, flags: Int32, store: String) throws(CoherenceError) {
        let fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw CoherenceError(.invalidLocation, "Cannot open the new directory \(path): \(lastError).", store: store)
        }
        defer { close(fd) }
        guard fchmod(fd, mode) == 0 else {
            throw CoherenceError(.invalidLocation, "Cannot set the permissions of \(path): \(lastError).", store: store)
        }
    }
}
