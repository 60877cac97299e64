/// A strong reference kept by hand: retained when made, released by exactly one call of
/// ``release()``. Cheaper than a stored strong reference where the holder's own lifecycle
/// already says when to let go (an object's context handle and fetch group, released in the
/// object's `deinit`), because reading it retains nothing.
///
/// - Invariant: ``release()`` is called once, after the last use.
@frozen @usableFromInline
package struct RetainedReference<Object: AnyObject> {
    @usableFromInline let unmanaged: Unmanaged<Object>

    /// Retains `object`.
    @inlinable @inline(__always)
    package init(retaining object: Object) { unmanaged = .passRetained(object) }

    /// The object, retained for the caller.
    @inlinable @inline(__always)
    package var object: Object { unmanaged.takeUnretainedValue() }

    /// Calls `body` with the object, without retaining and releasing it around the call.
    @inlinable @inline(__always)
    package func withObject<R>(_ body: (Object) throws -> R) rethrows -> R {
        try unmanaged._withUnsafeGuaranteedRef(body)
    }

    /// Whether this refers to `other` (an identity comparison).
    @inlinable @inline(__always)
    package func refers(to other: Object) -> Bool {
        unmanaged.toOpaque() == Unmanaged.passUnretained(other).toOpaque()
    }

    /// A second reference to the same object, retained once more (released on its own).
    @inlinable @inline(__always)
    package func retainedAgain() -> Self { Self(unmanaged: unmanaged.retain()) }

    /// The object, handing this reference's count to the caller: the reference must not be
    /// used or released afterwards.
    @inlinable @inline(__always)
    package func takeObject() -> Object { unmanaged.takeRetainedValue() }

    @inlinable @inline(__always)
    init(unmanaged: Unmanaged<Object>) { self.unmanaged = unmanaged }

    /// Gives up the reference taken by ``init(retaining:)``.
    @inlinable @inline(__always)
    package func release() { unmanaged.release() }
}
