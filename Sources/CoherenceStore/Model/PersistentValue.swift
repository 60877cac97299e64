import Foundation

/// A Swift type that can be the value of a managed object attribute.
///
/// Coherence provides conformances for `Int`, `Int16`, `Int32`, `Int64`, `Double`, `Float`,
/// `Bool`, `String`, `Data`, `Date`, `UUID`, `URL`, `Decimal` and `Optional` of each.
/// `RawRepresentable` enums get a conformance by declaring it:
///
/// ```swift
/// enum Status: String, PersistentValue { case active, retired }
/// final class Employee: ManagedObject {
///     @Attribute var status: Status = .active
/// }
/// ```
public protocol PersistentValue {
    /// The attribute type that stores values of this Swift type.
    static var attributeType: AttributeType { get }
    /// Whether `nil` is a valid value (true for `Optional`).
    static var isOptionalType: Bool { get }
    /// The stored form of the value.
    var storedValue: StoredValue { get }
    /// Decodes a stored value; `nil` when it is not a valid stored form of this type.
    init?(storedValue: StoredValue)
    /// A placeholder value used when Coherence resolves key paths against a probe object.
    static var placeholder: Self { get }
}

extension PersistentValue {
    public static var isOptionalType: Bool { false }
}

extension Optional: PersistentValue where Wrapped: PersistentValue {
    public static var attributeType: AttributeType { Wrapped.attributeType }
    public static var isOptionalType: Bool { true }
    @inlinable public var storedValue: StoredValue {
        switch self {
        case .none: return .null
        case .some(let w): return w.storedValue
        }
    }
    @inlinable public init?(storedValue: StoredValue) {
        if case .null = storedValue { self = .none; return }
        guard let w = Wrapped(storedValue: storedValue) else { return nil }
        self = .some(w)
    }
    public static var placeholder: Self { .none }
}

extension Int: PersistentValue {
    public static var attributeType: AttributeType { .integer64 }
    @inlinable public var storedValue: StoredValue { .integer(Int64(self)) }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .integer(let v) = storedValue, let i = Int(exactly: v) else { return nil }
        self = i
    }
    public static var placeholder: Int { 0 }
}

extension Int64: PersistentValue {
    public static var attributeType: AttributeType { .integer64 }
    @inlinable public var storedValue: StoredValue { .integer(self) }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .integer(let v) = storedValue else { return nil }
        self = v
    }
    public static var placeholder: Int64 { 0 }
}

extension Int32: PersistentValue {
    public static var attributeType: AttributeType { .integer32 }
    @inlinable public var storedValue: StoredValue { .integer(Int64(self)) }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .integer(let v) = storedValue, let i = Int32(exactly: v) else { return nil }
        self = i
    }
    public static var placeholder: Int32 { 0 }
}

extension Int16: PersistentValue {
    public static var attributeType: AttributeType { .integer16 }
    @inlinable public var storedValue: StoredValue { .integer(Int64(self)) }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .integer(let v) = storedValue, let i = Int16(exactly: v) else { return nil }
        self = i
    }
    public static var placeholder: Int16 { 0 }
}

extension Bool: PersistentValue {
    public static var attributeType: AttributeType { .boolean }
    @inlinable public var storedValue: StoredValue { .integer(self ? 1 : 0) }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .integer(let v) = storedValue, v == 0 || v == 1 else { return nil }
        self = v == 1
    }
    public static var placeholder: Bool { false }
}

extension Double: PersistentValue {
    public static var attributeType: AttributeType { .double }
    /// Exact to the bit: NaN and −0.0 are stored as their bit pattern (see ``StoredValue/init(double:)``).
    @inlinable public var storedValue: StoredValue { StoredValue(double: self) }
    @inlinable public init?(storedValue: StoredValue) {
        switch storedValue {
        case .real(let v): self = v
        case .integer(let v): self = Double(v)  // SQLite may hand back integral reals as integers
        case .blob(let d):
            guard let v = StoredValue.double(bigEndianBytes: d) else { return nil }
            self = v
        default: return nil
        }
    }
    public static var placeholder: Double { 0 }
}

extension Float: PersistentValue {
    public static var attributeType: AttributeType { .float }
    /// Stored as the `Double` with the same value, exact to the bit: a NaN keeps its sign,
    /// quiet bit and payload, −0.0 its sign (see ``StoredValue/init(double:)``).
    @inlinable public var storedValue: StoredValue {
        StoredValue(double: isNaN ? StoredValue.widenedNaN(self) : Double(self))
    }
    @inlinable public init?(storedValue: StoredValue) {
        switch storedValue {
        case .real(let v): self = Float(v)
        case .integer(let v): self = Float(v)
        case .blob(let d):
            guard let v = StoredValue.double(bigEndianBytes: d) else { return nil }
            self = v.isNaN ? StoredValue.float(fromWidenedNaN: v) : Float(v)
        default: return nil
        }
    }
    public static var placeholder: Float { 0 }
}

extension String: PersistentValue {
    public static var attributeType: AttributeType { .string }
    @inlinable public var storedValue: StoredValue { .text(self) }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .text(let v) = storedValue else { return nil }
        self = v
    }
    public static var placeholder: String { "" }
}

extension Data: PersistentValue {
    public static var attributeType: AttributeType { .binaryData }
    @inlinable public var storedValue: StoredValue { .blob(self) }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .blob(let v) = storedValue else { return nil }
        self = v
    }
    public static var placeholder: Data { Data() }
}

extension Date: PersistentValue {
    public static var attributeType: AttributeType { .date }
    /// Its instant, `timeIntervalSinceReferenceDate`: a REAL, or for a NaN interval the blob
    /// form of ``StoredValue/init(double:)`` (−0.0 is the instant 0, stored as 0).
    @inlinable public var storedValue: StoredValue {
        let t = timeIntervalSinceReferenceDate
        return t.isNaN ? StoredValue(double: t) : .real(t == 0 ? 0 : t)
    }
    @inlinable public init?(storedValue: StoredValue) {
        switch storedValue {
        case .real(let v): self = Date(timeIntervalSinceReferenceDate: v)
        case .integer(let v): self = Date(timeIntervalSinceReferenceDate: Double(v))
        case .blob(let d):
            guard let v = StoredValue.double(bigEndianBytes: d) else { return nil }
            self = Date(timeIntervalSinceReferenceDate: v)
        default: return nil
        }
    }
    public static var placeholder: Date { Date(timeIntervalSinceReferenceDate: 0) }
}

extension UUID: PersistentValue {
    public static var attributeType: AttributeType { .uuid }
    @inlinable public var storedValue: StoredValue {
        withUnsafeBytes(of: uuid) { .blob(Data($0)) }
    }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .blob(let d) = storedValue, d.count == 16 else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &raw) { dst in d.withUnsafeBytes { src in dst.copyMemory(from: src) } }
        self = UUID(uuid: raw)
    }
    public static var placeholder: UUID { UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) }
}

extension URL: PersistentValue {
    public static var attributeType: AttributeType { .uri }
    @inlinable public var storedValue: StoredValue { .text(absoluteString) }
    @inlinable public init?(storedValue: StoredValue) {
        guard case .text(let s) = storedValue, let u = URL(string: s) else { return nil }
        self = u
    }
    public static var placeholder: URL { URL(fileURLWithPath: "/") }
}

extension Decimal: PersistentValue {
    public static var attributeType: AttributeType { .decimal }
    public var storedValue: StoredValue { .text(DecimalText.format(self)) }
    /// Reads decimal text, or a number (what a `DECIMAL` column of a store made by Core Data
    /// holds), through its shortest decimal form.
    public init?(storedValue: StoredValue) {
        switch storedValue {
        case .text(let s):
            guard let d = DecimalText.parse(s) else { return nil }
            self = d
        case .integer(let v): self = Decimal(v)
        case .real(let v):
            guard v.isFinite, let d = DecimalText.parse(String(v)) else { return nil }
            self = d
        default: return nil
        }
    }
    public static var placeholder: Decimal { 0 }
}

/// Exact text form of `Decimal`: locale-independent, round-trips every finite value.
package enum DecimalText {
    static let posix = Locale(identifier: "en_US_POSIX")
    static func format(_ d: Decimal) -> String { d.description }
    /// The decimal a stored text holds; `"NaN"` (how `Decimal.nan` is stored, as PostgreSQL's
    /// `NUMERIC` writes it too) is `Decimal.nan`, which `Decimal(string:)` does not read.
    /// Only a whole number is read (sign, digits, a point, an exponent): `Decimal(string:)`
    /// reads the longest prefix it can, so `"-Infinity"` (a PostgreSQL `NUMERIC`) would be 0
    /// and `"1,5"` 1. Other text is nil, as it is not a decimal.
    package static func parse(_ s: String) -> Decimal? {
        if s == "NaN" { return .nan }
        guard isNumber(s) else { return nil }
        return Decimal(string: s, locale: posix)
    }

    /// Whether `s` is `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`.
    private static func isNumber(_ s: String) -> Bool {
        var digits = 0, exponentDigits = 0
        var sawPoint = false, sawExponent = false
        var previous: UInt8 = 0
        for (i, c) in s.utf8.enumerated() {
            defer { previous = c }
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if sawExponent { exponentDigits += 1 } else { digits += 1 }
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                guard i == 0 || previous == UInt8(ascii: "e") || previous == UInt8(ascii: "E") else { return false }
            case UInt8(ascii: "."):
                guard !sawPoint, !sawExponent else { return false }
                sawPoint = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                guard !sawExponent, digits > 0 else { return false }
                sawExponent = true
            default: return false
            }
        }
        return digits > 0 && (!sawExponent || exponentDigits > 0)
    }
    /// Numeric comparison of two decimal texts as Swift's `Decimal` compares them: NaN equal to
    /// itself and before every number (`Decimal.nan < 0`); unparseable text after every
    /// decimal, bytewise.
    package static func compare(_ a: String, _ b: String) -> Int {
        compare(a, b, nanFirst: true)
    }

    /// The order of the `COHERENCE_DECIMAL` collation that decimal columns of SQLite stores are
    /// declared with, which their indexes are built in: NaN after every number. Comparisons
    /// and sorts use ``compare(_:_:)`` (the `COHERENCE_DECIMAL_ORDER` collation) instead; the
    /// two only differ for NaN, which is equal to itself in both.
    package static func columnOrder(_ a: String, _ b: String) -> Int {
        compare(a, b, nanFirst: false)
    }

    private static func compare(_ a: String, _ b: String, nanFirst: Bool) -> Int {
        switch (parse(a), parse(b)) {
        case let (x?, y?) where x.isNaN || y.isNaN:
            if x.isNaN && y.isNaN { return 0 }
            return x.isNaN == nanFirst ? -1 : 1
        case let (x?, y?): return x < y ? -1 : (x == y ? 0 : 1)
        case (nil, _?): return 1
        case (_?, nil): return -1
        case (nil, nil): return StoredValue.compareUTF8(a, b)
        }
    }
}

extension RawRepresentable where RawValue: PersistentValue {
    /// The raw value's attribute type: a `RawRepresentable` value is stored as its raw value.
    public static var attributeType: AttributeType { RawValue.attributeType }
    /// The raw value, stored.
    public var storedValue: StoredValue { rawValue.storedValue }
    /// The value whose raw value is stored; nil when the stored value is no valid raw value.
    public init?(storedValue: StoredValue) {
        guard let raw = RawValue(storedValue: storedValue) else { return nil }
        self.init(rawValue: raw)
    }
}

extension RawRepresentable where RawValue: PersistentValue, Self: CaseIterable {
    /// The first case (an enum without cases cannot be an attribute type).
    public static var placeholder: Self {
        guard let first = allCases.first else {
            preconditionFailure("\(Self.self) has no cases and cannot be an attribute type")
        }
        return first
    }
}
