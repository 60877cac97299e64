import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Wakes when a store's companion file (`<store>-changes`) is written, without polling.
///
/// Every coordinator that commits to a store with ``StoreOptions/remoteChangeNotificationPost``
/// writes the companion file after the commit (``CommitCounterFile/increment(at:)``). A watcher
/// sleeps in the kernel until that happens: on Linux an inotify instance whose descriptor a
/// dispatch read source watches, on Apple platforms a dispatch file-system-object source on the
/// file. It then calls `onWake` on its private serial queue; the coordinator confirms with the
/// file's commit counter (a wake-up is only a hint: its own commits wake it too).
///
/// Commits in quick succession (a process saving in a loop) would wake it once each, which
/// costs two thread switches per commit. So a wake-up that comes within ``quietPeriod`` of the
/// one before starts a quiet period: the source is suspended (the kernel keeps the events, and
/// merges them) until a timer on the queue resumes it, and the next wake-up reports every commit
/// of that period at once. A lone commit is still reported at once; a burst of commits at most
/// ``quietPeriod`` late.
///
/// The watcher's life is ``Phase``: ``Phase/idle`` until ``start()``, ``Phase/watching`` while
/// registered (quiet or not), ``Phase/stopping`` from ``stop()`` until the dispatch source's
/// cancel handler closed the descriptor, then ``Phase/stopped``. Nothing runs in the
/// background: the queue runs only the source's handlers and the end of a quiet period.
package final class RemoteChangeWatcher: Sendable {
    /// Where the watcher is in its life.
    package enum Phase: Sendable, Equatable {
        /// Made; nothing registered yet.
        case idle
        /// Registered with the system: a write to the companion file wakes it.
        case watching
        /// Cancelled; the dispatch source has yet to run its cancel handler, which closes the
        /// descriptor.
        case stopping
        /// Nothing held: no descriptor, no dispatch source. Final.
        case stopped
    }

    /// What the watcher holds in each phase.
    private enum State {
        case idle
        case watching(Watching)
        case stopping
        case stopped

        var phase: Phase {
            switch self {
            case .idle: return .idle
            case .watching: return .watching
            case .stopping: return .stopping
            case .stopped: return .stopped
            }
        }
    }

    /// A descriptor and the dispatch source that watches it (the source's cancel handler closes
    /// the descriptor: dispatch must stop using it before it is closed).
    private struct Registration {
        /// Linux: the inotify instance. Apple platforms: the companion file, opened for events.
        let descriptor: Int32
        let source: any DispatchSourceProtocol
    }

    /// A registered watcher.
    private struct Watching {
        var registration: Registration
        /// When the last wake-up was handled (`DispatchTime` nanoseconds).
        var lastWake: UInt64 = 0
        /// In a quiet period: the source is suspended until ``RemoteChangeWatcher/endQuietPeriod()``
        /// (a suspended source must be resumed before it may be cancelled or released).
        var isQuiet = false
    }

    /// How long a watcher woken twice in quick succession lets events gather before it is woken
    /// again.
    package static let quietPeriod = DispatchTimeInterval.milliseconds(2)
    private static let quietNanoseconds: UInt64 = 2_000_000

    /// The companion file.
    package let companionPath: String
    private let state = LockedValue<State>(.idle)
    private let queue = DispatchQueue(label: "org.coherence.remote-changes")
    private let onWake: @Sendable () -> Void
    /// Entered for each registration, left by its cancel handler once the descriptor is closed.
    private let registrations = DispatchGroup()

    /// A watcher of `companionPath`, calling `onWake` on its queue after each wake-up.
    package init(companionPath: String, onWake: @escaping @Sendable () -> Void) {
        self.companionPath = companionPath
        self.onWake = onWake
    }

    deinit { stop() }

    /// Where the watcher is in its life.
    package var phase: Phase { state.withLock { $0.phase } }

    /// Whether the watcher is in a quiet period (for tests).
    package var isQuiet: Bool {
        state.withLock { s in
            if case .watching(let w) = s { return w.isQuiet }
            return false
        }
    }

    /// Creates the companion file if it is missing (readable by its owner only) and registers
    /// the watcher. Does nothing unless the watcher is ``Phase/idle``.
    /// - Throws: `.storeOpenFailed` when the file cannot be made or watched (for example when
    ///   the system's limit of inotify instances is reached).
    package func start() throws(CoherenceError) {
        guard phase == .idle else { return }
        try OwnerOnlyFiles.createFile(atPath: companionPath)
        let registration = try register()
        let started = state.withLock { s -> Bool in
            guard case .idle = s else { return false }
            s = .watching(Watching(registration: registration))
            return true
        }
        registration.source.resume()
        if !started { registration.source.cancel() }
    }

    /// Cancels the registration; the descriptor is closed by the source's cancel handler, on
    /// the watcher's queue, right after any wake-up being handled. Returns at once (it may run on
    /// that queue: a coordinator released there stops its watchers).
    package func stop() {
        state.withLock { s in
            switch s {
            case .idle:
                s = .stopped
            case .watching(let w):
                s = .stopping
                w.registration.source.cancel()
                // A suspended source runs its cancel handler only once resumed.
                if w.isQuiet { w.registration.source.resume() }
            case .stopping, .stopped:
                break
            }
        }
    }

    /// After a wake-up was handled: a second one within ``quietPeriod`` starts a quiet period.
    private func noteWake() {
        let now = DispatchTime.now().uptimeNanoseconds
        let quiet = state.withLock { s -> Bool in
            guard case .watching(var w) = s else { return false }
            defer { s = .watching(w) }
            let soon = now &- w.lastWake < Self.quietNanoseconds
            w.lastWake = now
            guard soon, !w.isQuiet else { return false }
            w.isQuiet = true
            w.registration.source.suspend()
            return true
        }
        if quiet {
            queue.asyncAfter(deadline: .now() + Self.quietPeriod) { [weak self] in self?.endQuietPeriod() }
        }
    }

    /// Resumes the source at the end of a quiet period (unless the watcher stopped meanwhile:
    /// `stop()` resumed it). A wake-up right after, for events of the period, starts another.
    private func endQuietPeriod() {
        let now = DispatchTime.now().uptimeNanoseconds
        state.withLock { s in
            guard case .watching(var w) = s, w.isQuiet else { return }
            w.isQuiet = false
            w.lastWake = now
            w.registration.source.resume()
            s = .watching(w)
        }
    }

    /// Waits until every registration was cancelled and its descriptor closed (after
    /// ``stop()``), at most `timeout`; returns whether it happened. Never call it on the
    /// watcher's queue (from a remote-change notification's observer).
    package func waitUntilStopped(timeout: DispatchTime) -> Bool {
        registrations.wait(timeout: timeout) == .success
    }

    /// The error of a watcher that could not be registered.
    private func failure(_ what: String) -> CoherenceError {
        let code = errno
        let reason = String(cString: strerror(code))
        var hint = ""
        #if os(Linux)
        if code == EMFILE {
            hint = " The user's inotify instances (fs.inotify.max_user_instances) or the process's descriptors are used up."
        }
        #endif
        return CoherenceError(
            .storeOpenFailed, "Cannot watch \(companionPath) for other processes' commits: \(what): \(reason).\(hint)",
            store: companionPath)
    }

    /// After a registration's source was cancelled: closes its descriptor and, when the
    /// watcher was stopping, ends its life.
    private static func cancelHandler(
        descriptor: Int32, state: LockedValue<State>, group: DispatchGroup
    ) -> @Sendable () -> Void {
        { [state, group] in
            close(descriptor)
            state.withLock { s in
                if case .stopping = s { s = .stopped }
            }
            group.leave()
        }
    }

    #if canImport(Darwin)

    /// What wakes the watcher: writes, and the file being deleted, renamed or revoked (then
    /// the watcher watches the new file at the path).
    private static var events: DispatchSource.FileSystemEvent { [.write, .extend, .attrib, .delete, .rename, .revoke] }

    /// Opens the companion file for events and makes a suspended source on it.
    private func register() throws(CoherenceError) -> Registration {
        let fd = open(companionPath, O_EVTONLY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot open it for events") }
        let source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: fd, eventMask: Self.events, queue: queue)
        source.setEventHandler { [weak self] in self?.wake() }
        registrations.enter()
        source.setCancelHandler(handler: Self.cancelHandler(descriptor: fd, state: state, group: registrations))
        return Registration(descriptor: fd, source: source)
    }

    private func wake() {
        if !watchesCurrentFile() { rearm() }
        onWake()
        noteWake()
    }

    /// Whether the registered descriptor is still the file at the companion path.
    private func watchesCurrentFile() -> Bool {
        guard
            let fd = state.withLock({ s -> Int32? in
                if case .watching(let w) = s { return w.registration.descriptor }
                return nil
            })
        else { return true }
        var watched = stat(), current = stat()
        guard fstat(fd, &watched) == 0, stat(companionPath, &current) == 0 else { return false }
        return watched.st_dev == current.st_dev && watched.st_ino == current.st_ino
    }

    /// Watches the file now at the companion path (made again if it was deleted) instead of
    /// the one that was replaced.
    private func rearm() {
        do throws(CoherenceError) {
            try OwnerOnlyFiles.createFile(atPath: companionPath)
            let fresh = try register()
            fresh.source.resume()
            state.withLock { s in
                // Called from the old source's handler: it is not suspended.
                guard case .watching(var w) = s else {
                    fresh.source.cancel()
                    return
                }
                w.registration.source.cancel()
                w.registration = fresh
                s = .watching(w)
            }
        } catch {
            CoherenceLogging.log(.warning, "store", "Stopped hearing other processes' commits: \(error)")
        }
    }

    #else

    /// What wakes the watcher: writes, and the file being deleted or moved (then the watcher
    /// watches the new file at the path).
    private static let events = UInt32(IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

    /// Makes an inotify instance watching the companion file, and a suspended source on it.
    private func register() throws(CoherenceError) -> Registration {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw failure("inotify_init1 failed") }
        guard inotify_add_watch(fd, companionPath, Self.events) >= 0 else {
            let error = failure("inotify_add_watch failed")
            close(fd)
            throw error
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.wake(fd) }
        registrations.enter()
        source.setCancelHandler(handler: Self.cancelHandler(descriptor: fd, state: state, group: registrations))
        return Registration(descriptor: fd, source: source)
    }

    /// Reads every pending event (the descriptor is non-blocking), watches the file again if it
    /// was deleted or moved, then wakes the owner once.
    private func wake(_ fd: Int32) {
        var rearm = false
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            // Events are a 16-byte header (wd, mask, cookie, len) and `len` bytes of name
            // (none: the watch is on the file itself). Read inside the buffer's scope only.
            buffer.withUnsafeBytes { raw in
                var offset = 0
                while offset + 16 <= count {
                    let wd = raw.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                    let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    if mask & UInt32(IN_MOVE_SELF) != 0 {
                        // The file moved away: stop watching it, watch whatever is at the path.
                        inotify_rm_watch(fd, wd)
                        rearm = true
                    }
                    if mask & UInt32(IN_IGNORED | IN_DELETE_SELF) != 0 { rearm = true }
                    offset += 16 + length
                }
            }
        }
        if rearm { self.rearm(fd) }
        onWake()
        noteWake()
    }

    /// Watches the file now at the companion path (made again if it was deleted).
    private func rearm(_ fd: Int32) {
        do throws(CoherenceError) {
            try OwnerOnlyFiles.createFile(atPath: companionPath)
        } catch {
            CoherenceLogging.log(.warning, "store", "Stopped hearing other processes' commits: \(error)")
            return
        }
        if inotify_add_watch(fd, companionPath, Self.events) < 0 {
            CoherenceLogging.log(.warning, "store", "Stopped hearing other processes' commits: \(failure("inotify_add_watch failed"))")
        }
    }

    #endif
}
