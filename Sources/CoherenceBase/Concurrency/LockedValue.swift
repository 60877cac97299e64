#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex`, the one lock type of the library.
///
/// `Synchronization.Mutex` on Linux is built on futexes that the thread sanitizer does not see,
/// so it reports every access under such a lock as a race; a `pthread_mutex` it understands, so
/// every report left is real (as with swift-nio's `NIOLock`).
///
/// ```swift
/// let counts = LockedValue([String: Int]())
/// counts.withLock { $0["saves", default: 0] += 1 }
/// ```
package final class LockedValue<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only inside `withLock`, between
    // `pthread_mutex_lock` and `pthread_mutex_unlock` of `mutex`.

    /// The mutex, allocated once and never moved: a `pthread_mutex_t` must stay at the address
    /// it was initialized at (checked: `init` and `deinit` assert the calls succeed).
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    /// Creates a lock guarding `value`.
    package init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        assert(status == 0, "pthread_mutex_init failed: \(status)")
    }

    deinit {
        let status = pthread_mutex_destroy(mutex)
        assert(status == 0, "pthread_mutex_destroy failed (still locked?): \(status)")
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// Do not call `withLock` on the same lock from inside `body` (the mutex is not recursive).
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body(&value)
    }

    @usableFromInline
    func lock() {
        let status = pthread_mutex_lock(mutex)
        assert(status == 0, "pthread_mutex_lock failed: \(status)")
    }

    @usableFromInline
    func unlock() {
        let status = pthread_mutex_unlock(mutex)
        assert(status == 0, "pthread_mutex_unlock failed: \(status)")
    }
}

extension LockedValue where Value == Void {
    /// Creates a lock that guards no value, only a section of code.
    package convenience init() { self.init(()) }

    /// Runs `body` while holding the lock.
    @inlinable
    package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
