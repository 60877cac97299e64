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
