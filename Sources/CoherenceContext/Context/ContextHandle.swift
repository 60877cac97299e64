/// The reference a context's objects hold to it. One per context; the context clears it in its
/// `deinit`, so objects that outlive their context find nil (as with a weak reference) without
/// paying for a weak reference (and its side table traffic) per object.
@usableFromInline
package final class ContextHandle {
    /// The context, or nil once it is gone. Unowned(unsafe) is sound because the context clears
    /// it before it is freed; objects and the context are used on the context's executor only.
    /// (`@exclusivity(unchecked)`, as the fields below: executor-confined and read per access.)
    @exclusivity(unchecked) @usableFromInline package unowned(unsafe) var context: ManagedObjectContext? {
        didSet {
            isAlive = context != nil
            unmanagedContext = context.map { Unmanaged.passUnretained($0) }
        }
    }
    /// The same reference, for calls that must not retain the context: contexts are weakly
    /// referenced (the coordinator's registry), so each retain or release of one goes through its
    /// side table, which costs several times a plain one.
    @exclusivity(unchecked) @usableFromInline package var unmanagedContext: Unmanaged<ManagedObjectContext>?

    /// Runs `body` with the context, without retaining it (nil when the context is gone).
    @inlinable @inline(__always)
    package func withContext<R>(_ body: (ManagedObjectContext) -> R) -> R? {
        guard let c = unmanagedContext else { return nil }
        return c._withUnsafeGuaranteedRef(body)
    }
    /// Whether `context` is set: testing it needs no retain of the context.
    @exclusivity(unchecked) package private(set) var isAlive = false
    /// Changes whenever the context's identity map (`registered`) changes.
    @exclusivity(unchecked) package var generation: UInt64 = 0
    init() {}
}
