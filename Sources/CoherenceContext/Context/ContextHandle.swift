/// The reference a context's objects hold to it. One per context; the context clears it in its
/// `deinit`, so objects that outlive their context find nil (as with a weak reference) without
/// paying for a weak reference (and its side table traffic) per object.
@usableFromInline
package final class ContextHandle {
    /// The context, without a reference count (nil once it is gone): contexts are weakly
    /// referenced (children lists, coordinator subscriptions), so each retain or release of one
    /// goes through its side table, which costs several times a plain one.
    // Invariant: the context sets it in its initializer and clears it in its `deinit`.
    @exclusivity(unchecked) @usableFromInline package var reference: UnretainedReference<ManagedObjectContext>? {
        didSet { isAlive = reference != nil }
    }
    /// The context, or nil once it is gone (retained for the caller).
    @usableFromInline package var context: ManagedObjectContext? {
        @inline(__always) get { reference?.object }
        set { reference = newValue.map { UnretainedReference($0) } }
    }

    /// Runs `body` with the context, without retaining it (nil when the context is gone).
    @inlinable @inline(__always)
    package func withContext<R>(_ body: (ManagedObjectContext) -> R) -> R? {
        reference?.withObject(body)
    }
    /// Whether `context` is set: testing it needs no retain of the context.
    @exclusivity(unchecked) package private(set) var isAlive = false
    /// Changes whenever the context's identity map (`registered`) changes.
    @exclusivity(unchecked) package var generation: UInt64 = 0
    init() {}
}
