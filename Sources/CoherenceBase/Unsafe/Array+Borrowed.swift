extension Array where Element: AnyObject {
    /// Calls `body` on each element, in order, without retaining and releasing it around the
    /// call (a `for`-`in` loop takes each element at +1: two atomic operations per element, on
    /// objects a save's passes mostly find out of the cache).
    ///
    /// Safe because the array value this is called on holds every element for the whole loop,
    /// and the loop cannot change that value: code in `body` that changes the property the array
    /// came from changes its own copy. `body` may keep an element (storing it retains it).
    ///
    /// - Complexity: O(*n*).
    @inlinable @inline(__always)
    package func forEachBorrowed(_ body: (Element) throws -> Void) rethrows {
        // Invariant: the array holds each element for the whole call.
        try withUnsafeBufferPointer { buffer in
            for i in buffer.indices { try UnretainedReference(buffer[i]).withObject(body) }
        }
    }

    /// The array as an array of `T`, without a copy, when every element is known to be a `T`
    /// (the caller checked each, or made each as one).
    ///
    /// Debug builds check every element.
    /// - Complexity: O(1) (O(*n*) in debug builds).
    @inlinable
    package func unsafelyCastElements<T: AnyObject>(to type: T.Type) -> [T] {
        assert(allSatisfy { $0 is T }, "an element is not a \(T.self)")
        // Invariant: every element is a `T` (class references share one representation).
        return unsafeBitCast(self, to: [T].self)
    }
}
