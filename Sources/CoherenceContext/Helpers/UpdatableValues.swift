import Foundation

/// How ``Updatable`` tells a new value from the current one: as the store keeps them. A plain
/// `==` says NaN differs from NaN (and a setter call would report a write that changed nothing)
/// and −0.0 equals 0.0 (which the store keeps apart, so the call would skip a real change), and
/// so do canonically equivalent strings with different bytes (`"\u{E9}"` and `"e\u{301}"`).
enum UpdatableValues {
    /// Whether `a` and `b` are the same stored value: `Double`, `Float` and `Date` values (also
    /// wrapped in an optional) bit for bit, strings by their UTF-8 bytes, other values by `==`.
    static func same<V: Equatable>(_ a: V, _ b: V) -> Bool {
        switch (a, b) {
        case (let x as Double, let y as Double): return identical(x, y)
        case (let x as Float, let y as Float): return identical(x, y)
        case (let x as Date, let y as Date): return identical(x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
        case (let x as String, let y as String): return x.utf8.elementsEqual(y.utf8)
        default: return a == b
        }
    }

    /// Whether two floating-point values have the same bits (NaN is itself, −0.0 is not 0.0).
    static func identical<F: BinaryFloatingPoint>(_ a: F, _ b: F) -> Bool {
        a.sign == b.sign && a.exponentBitPattern == b.exponentBitPattern && a.significandBitPattern == b.significandBitPattern
    }
}
