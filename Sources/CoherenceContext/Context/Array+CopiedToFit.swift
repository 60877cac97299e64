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
