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
    @inline(__always)
    func forEachBorrowed(_ body: (Element) throws -> Void) rethrows {
        // Invariant: the array holds each element for the whole call; `_withUnsafeGuaranteedRef`
        // tells the compiler so (the element read from the buffer is not retained around `body`).
        try withUnsafeBufferPointer { buffer in
            for i in buffer.indices {
                try Unmanaged.passUnretained(buffer[i])._withUnsafeGuaranteedRef(body)
            }
        }
    }
}

extension Array {
    /// A copy whose storage holds its elements and little more (for an array that reserved
    /// room for many more elements than came).
    /// - Complexity: O(*n*).
    func copiedToFit() -> [Element] {
        var copy: [Element] = []
        copy.reserveCapacity(count)
        copy.append(contentsOf: self)
        return copy
    }
}
