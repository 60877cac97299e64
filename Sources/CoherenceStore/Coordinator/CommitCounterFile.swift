import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A store's companion file, `<store>-changes`: a counter of the commits that coordinators with
/// ``StoreOptions/remoteChangeNotificationPost`` made to the store, in every process.
///
/// The file holds two little-endian `UInt64`s: the counter, then a random number naming this
/// file (given by the first commit counted in it), so that a file deleted and made again is
/// told from the one before even if its counter reached the same value; an empty file counts
/// 0. A committer adds one after each commit, under an exclusive `flock` of the file, and learns
/// the value its commit got; a reader takes a shared lock. The write is what wakes the other
/// coordinators' watchers (``RemoteChangeWatcher``); each then compares the counter with the
/// values its own commits got, so that neither its own commits nor a wake-up without a commit
/// post anything. A process killed while holding the lock loses it with its descriptors; one
/// stopped while holding it (a debugger, a suspended app) is waited for about two seconds at
/// most, as SQLite's busy timeout does, so that it cannot hold up the others' saves.
package enum CommitCounterFile {
    /// What the file says: which file it is, and how many commits it counted.
    package struct Reading: Hashable, Sendable {
        /// The file's random name (0: no commit counted in it yet).
        package var file: UInt64
        /// Commits counted.
        package var count: UInt64
    }

    /// The companion file of the SQLite store at `storeURL`, next to its `-wal` and `-shm` files.
    package static func path(forStoreAt storeURL: URL) -> String { storeURL.path + "-changes" }

    /// Adds one to the counter (making the file if it is missing, readable by its owner only)
    /// and returns the new reading: the value of the commit it announces. Nil when the file
    /// cannot be opened, locked or written (logged: the commit it announces is done, so nothing
    /// is thrown). A file holding anything else than a counter is started again.
    package static func increment(at path: String) -> Reading? {
        var fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 && errno == ENOENT {
            do throws(CoherenceError) {
                try OwnerOnlyFiles.createFile(atPath: path)
            } catch {
                CoherenceLogging.log(.warning, "store", "Cannot announce a commit to other coordinators: \(error)")
                return nil
            }
            fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        }
        guard fd >= 0 else { return failed("open", path) }
        defer { close(fd) }
        guard lock(fd, LOCK_EX) else { return failed("lock", path) }
        defer { flock(fd, LOCK_UN) }
        var reading = read(fd) ?? Reading(file: 0, count: 0)
        if reading.file == 0 { reading.file = UInt64.random(in: 1...UInt64.max) }
        reading.count &+= 1
        var bytes = (reading.count.littleEndian, reading.file.littleEndian)
        guard pwrite(fd, &bytes, 16, 0) == 16 else { return failed("write", path) }
        return reading
    }

    /// The file's reading (count 0 for an empty file). Nil when the file cannot be opened,
    /// locked or read, or holds something else.
    package static func reading(at path: String) -> Reading? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard lock(fd, LOCK_SH) else { return nil }
        defer { flock(fd, LOCK_UN) }
        return read(fd)
    }

    /// Takes the `flock` `operation` (`LOCK_EX` or `LOCK_SH`), waiting for a holder to let go
    /// with pauses from 20 µs doubling up to 10 ms, for about 2 s at most (the lock is held for
    /// three system calls: a holder that keeps it that long was stopped).
    private static func lock(_ fd: Int32, _ operation: Int32) -> Bool {
        var pause: UInt32 = 20
        var waited: UInt32 = 0
        while flock(fd, operation | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, waited < 2_000_000 else { return false }
            usleep(pause)
            waited += pause
            pause = min(pause * 2, 10_000)
        }
        return true
    }

    /// The reading of an open, locked file: empty is count 0 of no file yet.
    private static func read(_ fd: Int32) -> Reading? {
        var bytes: (UInt64, UInt64) = (0, 0)
        switch pread(fd, &bytes, 16, 0) {
        case 0: return Reading(file: 0, count: 0)
        case 16: return Reading(file: UInt64(littleEndian: bytes.1), count: UInt64(littleEndian: bytes.0))
        default: return nil
        }
    }

    private static func failed(_ what: String, _ path: String) -> Reading? {
        let reason = String(cString: strerror(errno))
        CoherenceLogging.log(.warning, "store", "Cannot announce a commit to other coordinators: cannot \(what) \(path): \(reason).")
        return nil
    }
}
