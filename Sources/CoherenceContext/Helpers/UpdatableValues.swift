import Foundation

/// How ``Updatable`` tells a new value from the current one: as the store keeps them, which is
/// what the setter compares. A plain `==` says NaN differs from NaN (and a setter call would
/// report a write that changed nothing) and −0.0 equals 0.0 (which the store keeps apart, so the
/// call would skip a real change), and so do canonically equivalent strings with different bytes
/// (`"\u{E9}"` and `"e\u{301}"`); it tells apart values the store keeps alike, such as a relative
/// URL and its absolute form, or the dates of −0.0 and 0.0 seconds (one instant).
enum UpdatableValues {
    /// Whether `a` and `b` are the same stored value: attribute values (also wrapped in an
    /// optional) by their ``StoredValue`` (`Double` and `Float` bit for bit, strings by their
    /// UTF-8 bytes, dates by their instant, URLs by their absolute string), other values by `==`.
    static func same<V: Equatable>(_ a: V, _ b: V) -> Bool {
        if let x = a as? any PersistentValue, let y = b as? any PersistentValue { return x.storedValue == y.storedValue }
        return a == b
    }

    /// Whether two floating-point values have the same bits (NaN is itself, −0.0 is not 0.0).
    static func identical<F: BinaryFloatingPoint>(_ a: F, _ b: F) -> Bool {
        a.sign == b.sign && a.exponentBitPattern == b.exponentBitPattern && a.significandBitPattern == b.significandBitPattern
    }
}
