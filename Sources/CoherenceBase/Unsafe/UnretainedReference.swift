/// A reference that does not retain its object, for hot paths where another owner is known to
/// keep the object alive (an identity map, an array being walked, a context that clears the
/// reference before it goes away).
///
/// This is one of the few places where Coherence's code is unsafe (see the table of unsafe
/// constructs in `Documentation/Architecture.md`): every holder states, in one line, who keeps
/// the object alive while it uses the reference.
///
/// - Invariant: the object is alive whenever ``object`` or ``withObject(_:)`` is called.
@frozen @usableFromInline
package struct UnretainedReference<Object: AnyObject> {
    @usableFromInline let unmanaged: Unmanaged<Object>

    /// Refers to `object` without retaining it.
    @inlinable @inline(__always)
    package init(_ object: Object) { unmanaged = .passUnretained(object) }

    /// The object, retained for the caller.
    @inlinable @inline(__always)
    package var object: Object { unmanaged.takeUnretainedValue() }

    /// Calls `body` with the object, without retaining and releasing it around the call.
    @inlinable @inline(__always)
    package func withObject<R>(_ body: (Object) throws -> R) rethrows -> R {
        try unmanaged._withUnsafeGuaranteedRef(body)
    }

    /// Whether this refers to `other` (an identity comparison; reads no object).
    @inlinable @inline(__always)
    package func refers(to other: Object) -> Bool {
        unmanaged.toOpaque() == Unmanaged.passUnretained(other).toOpaque()
    }

    /// Whether both refer to the same object.
    @inlinable @inline(__always)
    package static func === (lhs: Self, rhs: Self) -> Bool { lhs.unmanaged.toOpaque() == rhs.unmanaged.toOpaque() }
}

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

    /// Gives up the reference taken by ``init(retaining:)``.
    @inlinable @inline(__always)
    package func release() { unmanaged.release() }
}
