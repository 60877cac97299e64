import Foundation

/// A value as a store keeps it: one of SQLite's five storage classes.
///
/// Every attribute type maps onto one of these cases (see ``AttributeType``), so the same
/// representation serves managed objects, row snapshots, SQL binding and in-memory predicate
/// evaluation. You rarely need it directly; the dynamic API (`value(forKey:)`) returns typed values.
///
/// ```swift
/// let v: StoredValue = 42.storedValue   // .integer(42)
/// ```
public enum StoredValue: Hashable, Sendable {
    /// No value (`nil`).
    case null
    /// A 64-bit signed integer (all integer types, `Bool`).
    case integer(Int64)
    /// A double-precision float (`Double`, `Float`, `Date` as seconds since 2001-01-01). Never
    /// NaN or −0.0 in the form Coherence makes: see ``init(double:)``.
    case real(Double)
    /// Text (`String`, `URL`, `Decimal` in its exact decimal form).
    case text(String)
    /// Bytes (`Data`, `UUID` as 16 bytes, transformable values; the floating-point values
    /// SQLite cannot keep as a REAL, see ``init(double:)``).
    case blob(Data)

    /// Whether this is ``null``.
    @inlinable public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Whether two values are the same stored value. Text compares by its UTF-8 bytes, as SQLite
    /// and PostgreSQL compare it: canonically equivalent strings that differ in their bytes
    /// (`"\u{E9}"` and `"e\u{301}"`) are different values, so assigning one over the other is a
    /// change that is saved. (Equal values hash alike: byte-equal strings are equal `String`s.)
    ///
    /// ```swift
    /// StoredValue.text("\u{E9}") == .text("e\u{301}")   // false
    /// ```
    @inlinable public static func == (a: StoredValue, b: StoredValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.integer(let x), .integer(let y)): return x == y
        case (.real(let x), .real(let y)): return x == y
        case (.text(let x), .text(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.blob(let x), .blob(let y)): return x == y
        default: return false
        }
    }
}

extension StoredValue {
    /// The stored form of a `Double`, exact to the bit: ``real(_:)`` for every value SQLite
    /// keeps as a REAL (infinities and subnormals included), and for the two it cannot — NaN
    /// (SQLite binds it as NULL) and −0.0 (a REAL column keeps it as 0) — an 8-byte ``blob(_:)``
    /// of the bit pattern, most significant byte first. Ordinary values stay REALs, so SQL sorts,
    /// compares and indexes them as numbers; `Double`, `Float` and `Date` decode both forms.
    ///
    /// ```swift
    /// StoredValue(double: 1.5)    // .real(1.5)
    /// StoredValue(double: -0.0)   // .blob(80 00 00 00 00 00 00 00)
    /// StoredValue(double: .nan)   // .blob(7F F8 00 00 00 00 00 00)
    /// ```
    @inlinable public init(double value: Double) {
        if value.isNaN || value.bitPattern == Self.negativeZeroBits {
            self = .blob(Self.bigEndianBytes(value.bitPattern))
        } else {
            self = .real(value)
        }
    }

    /// The value as a `Double`: a REAL, an INTEGER converted, or an 8-byte blob of a bit
    /// pattern (``init(double:)``); nil for anything else.
    @inlinable public var doubleValue: Double? {
        switch self {
        case .real(let v): return v
        case .integer(let v): return Double(v)
        case .blob(let d): return Self.double(bigEndianBytes: d)
        case .null, .text: return nil
        }
    }

    /// Whether this is the blob form of NaN or −0.0 that ``init(double:)`` makes.
    package var isSpecialReal: Bool {
        guard case .blob(let d) = self, let v = Self.double(bigEndianBytes: d) else { return false }
        return v.isNaN || v.bitPattern == Self.negativeZeroBits
    }

    /// The bits of −0.0.
    @usableFromInline static let negativeZeroBits: UInt64 = 0x8000_0000_0000_0000

    /// Eight bytes, most significant first.
    @usableFromInline static func bigEndianBytes(_ bits: UInt64) -> Data {
        withUnsafeBytes(of: bits.bigEndian) { Data($0) }
    }

    /// The `Double` whose bit pattern is eight bytes, most significant first; nil for another length.
    @usableFromInline package static func double(bigEndianBytes d: Data) -> Double? {
        guard d.count == 8 else { return nil }
        var bits: UInt64 = 0
        for byte in d { bits = bits << 8 | UInt64(byte) }
        return Double(bitPattern: bits)
    }

    /// The `Double` NaN that holds a `Float` NaN's sign, quiet bit and payload (the Float's 23
    /// significand bits become the Double's top 23), so that ``float(fromWidenedNaN:)`` gives
    /// the same bits back. (Converting with `Double(_:)` would quiet a signaling NaN.)
    @usableFromInline package static func widenedNaN(_ f: Float) -> Double {
        let bits = UInt64(f.bitPattern)
        return Double(bitPattern: (bits & 0x8000_0000) << 32 | 0x7FF0_0000_0000_0000 | (bits & 0x007F_FFFF) << 29)
    }

    /// The `Float` NaN a ``widenedNaN(_:)`` came from; a Double NaN with none of those bits
    /// (made as a Double) is a quiet Float NaN of the same sign.
    @usableFromInline package static func float(fromWidenedNaN d: Double) -> Float {
        let significand = UInt32(truncatingIfNeeded: (d.bitPattern >> 29) & 0x007F_FFFF)
        let sign = UInt32(truncatingIfNeeded: d.bitPattern >> 32) & 0x8000_0000
        return Float(bitPattern: sign | 0x7F80_0000 | (significand != 0 ? significand : 0x0040_0000))
    }
}

extension StoredValue: CustomStringConvertible {
    /// The value for diagnostics: `nil`, a number, a quoted string or `<n bytes>`.
    public var description: String {
        switch self {
        case .null: return "nil"
        case .integer(let v): return String(v)
        case .real(let v): return String(v)
        case .text(let v): return String(reflecting: v)
        case .blob(let v): return "<\(v.count) bytes>"
        }
    }
}

extension StoredValue {
    /// Orders values the way SQLite does with the BINARY collation: NULL < numbers < text < blobs;
    /// integers and reals compare numerically. Decimal text is compared by the caller.
    package static func sqliteOrder(_ lhs: StoredValue, _ rhs: StoredValue) -> Int {
        func rank(_ v: StoredValue) -> Int {
            switch v {
            case .null: return 0
            case .integer, .real: return 1
            case .text: return 2
            case .blob: return 3
            }
        }
        let rl = rank(lhs), rr = rank(rhs)
        if rl != rr { return rl < rr ? -1 : 1 }
        switch (lhs, rhs) {
        case (.null, .null): return 0
        case (.integer(let a), .integer(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.integer(let a), .real(let b)): return compareNumeric(Double(a), b, exactInt: a, realIsRight: true)
        case (.real(let a), .integer(let b)): return -compareNumeric(Double(b), a, exactInt: b, realIsRight: true)
        case (.real(let a), .real(let b)): return a < b ? -1 : (a == b ? 0 : 1)
        case (.text(let a), .text(let b)): return compareUTF8(a, b)
        case (.blob(let a), .blob(let b)): return compareBytes(a, b)
        default: return 0
        }
    }

    private static func compareNumeric(_ intAsDouble: Double, _ real: Double, exactInt: Int64, realIsRight: Bool) -> Int {
        // intAsDouble vs real; exact when the real is integral and within Int64 range.
        if real.isNaN { return 1 }
        if real >= 9.2233720368547758e18 { return -1 }
        if real < -9.2233720368547758e18 { return 1 }
        let truncated = Int64(real.rounded(.down))
        if exactInt < truncated { return -1 }
        if exactInt > truncated { return 1 }
        let fraction = real - Double(truncated)
        return fraction > 0 ? -1 : 0
    }

    /// Compares strings by their UTF-8 bytes, which is SQLite's BINARY collation.
    package static func compareUTF8(_ a: String, _ b: String) -> Int {
        var a = a, b = b
        return a.withUTF8 { ua in
            b.withUTF8 { ub in
                let n = min(ua.count, ub.count)
                if n > 0, let pa = ua.baseAddress, let pb = ub.baseAddress {
                    let c = memcmp(pa, pb, n)
                    if c != 0 { return c < 0 ? -1 : 1 }
                }
                return ua.count < ub.count ? -1 : (ua.count == ub.count ? 0 : 1)
            }
        }
    }

    static func compareBytes(_ a: Data, _ b: Data) -> Int {
        let n = min(a.count, b.count)
        let c = a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb -> Int32 in
                guard n > 0, let x = pa.baseAddress, let y = pb.baseAddress else { return 0 }
                return memcmp(x, y, n)
            }
        }
        if c != 0 { return c < 0 ? -1 : 1 }
        return a.count < b.count ? -1 : (a.count == b.count ? 0 : 1)
    }
}

extension Array where Element == StoredValue {
    /// Whether both arrays use the same storage (so they are equal without comparing values):
    /// an object's values share their storage with its snapshot until the first change.
    @inline(__always)
    package func sharesStorage(with other: [StoredValue]) -> Bool {
        withUnsafeBufferPointer { a in other.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress && a.count == b.count } }
    }

    /// Whether the values at any of `slots` differ from `other`'s (compared in place: no value
    /// is copied, so no string is retained).
    @inline(__always)
    package func differs(from other: [StoredValue], at slots: [Int]) -> Bool {
        withUnsafeBufferPointer { a in
            other.withUnsafeBufferPointer { b in
                for slot in slots where slot < a.count && slot < b.count && a[slot] != b[slot] { return true }
                return false
            }
        }
    }

    /// Appends to `changed` each of `slots` whose value differs from `other`'s (compared in place).
    @inline(__always)
    package func appendDifferences(from other: [StoredValue], at slots: [Int], to changed: inout [Int]) {
        withUnsafeBufferPointer { a in
            other.withUnsafeBufferPointer { b in
                for slot in slots where slot < a.count && slot < b.count && a[slot] != b[slot] { changed.append(slot) }
            }
        }
    }
}

/// A slot and a value (a committed value kept by a sparse snapshot).
@usableFromInline
package struct SlotValue: Sendable {
    @usableFromInline package var slot: Int
    @usableFromInline package var value: StoredValue
    @usableFromInline package init(slot: Int, value: StoredValue) {
        self.slot = slot
        self.value = value
    }
}

extension Array where Element == StoredValue {
    /// These values with the committed values of a sparse snapshot put back.
    /// - Complexity: O(*n*) for the copy, plus one store per original.
    package func restoring(_ originals: [SlotValue]) -> [StoredValue] {
        var values = self
        for o in originals { values[o.slot] = o.value }
        return values
    }
}
