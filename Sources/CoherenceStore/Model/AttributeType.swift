import Foundation

/// The type of an attribute, as Core Data's `NSAttributeDescription.AttributeType`.
///
/// A struct over a private enum, so new types can be added without breaking `switch`es in
/// client code.
///
/// | Type | Swift type | Stored as |
/// |---|---|---|
/// | ``integer16`` / ``integer32`` / ``integer64`` | `Int16` / `Int32` / `Int64`, `Int` | INTEGER |
/// | ``double`` / ``float`` | `Double` / `Float` | REAL; NaN and −0.0 an 8-byte BLOB of the bits |
/// | ``boolean`` | `Bool` | INTEGER 0/1 |
/// | ``string`` | `String` | TEXT |
/// | ``binaryData`` | `Data` | BLOB |
/// | ``date`` | `Date` | REAL, seconds since 2001-01-01 (exact); NaN as for ``double`` |
/// | ``uuid`` | `UUID` | BLOB (16 bytes) |
/// | ``uri`` | `URL` | TEXT (absolute string) |
/// | ``decimal`` | `Decimal` | TEXT, exact, compared numerically |
/// | ``transformable`` | any `Codable` | BLOB |
public struct AttributeType: Hashable, Sendable, CustomStringConvertible {
    package enum Kind: Hashable, Sendable {
        case integer16, integer32, integer64, double, float, boolean, string, binaryData, date, uuid, uri, decimal, transformable
    }
    package let kind: Kind

    /// A 16-bit integer.
    public static let integer16 = AttributeType(kind: .integer16)
    /// A 32-bit integer.
    public static let integer32 = AttributeType(kind: .integer32)
    /// A 64-bit integer (`Int`, `Int64`).
    public static let integer64 = AttributeType(kind: .integer64)
    /// A double-precision number.
    public static let double = AttributeType(kind: .double)
    /// A single-precision number.
    public static let float = AttributeType(kind: .float)
    /// A Boolean.
    public static let boolean = AttributeType(kind: .boolean)
    /// A string.
    public static let string = AttributeType(kind: .string)
    /// Binary data.
    public static let binaryData = AttributeType(kind: .binaryData)
    /// A date.
    public static let date = AttributeType(kind: .date)
    /// A UUID.
    public static let uuid = AttributeType(kind: .uuid)
    /// A URL.
    public static let uri = AttributeType(kind: .uri)
    /// An exact decimal number.
    public static let decimal = AttributeType(kind: .decimal)
    /// A value stored as data through a transformer (Codable by default).
    public static let transformable = AttributeType(kind: .transformable)

    /// The type's name as in an Xcode model, for example `Integer 64`.
    public var description: String {
        switch kind {
        case .integer16: return "Integer 16"
        case .integer32: return "Integer 32"
        case .integer64: return "Integer 64"
        case .double: return "Double"
        case .float: return "Float"
        case .boolean: return "Boolean"
        case .string: return "String"
        case .binaryData: return "Binary Data"
        case .date: return "Date"
        case .uuid: return "UUID"
        case .uri: return "URI"
        case .decimal: return "Decimal"
        case .transformable: return "Transformable"
        }
    }

    /// The type named `description` (as ``description`` writes it), if any.
    package static func named(_ description: String) -> AttributeType? {
        let all: [AttributeType] = [
            .integer16, .integer32, .integer64, .double, .float, .boolean, .string, .binaryData, .date, .uuid, .uri, .decimal,
            .transformable
        ]
        return all.first { $0.description == description }
    }

    /// Whether stored values of this type read as `other` unchanged: the same type, or a wider
    /// one (Integer 16 → 32 → 64, Float → Double), as a lightweight migration allows.
    package func widens(to other: AttributeType) -> Bool {
        switch (kind, other.kind) {
        case (.integer16, .integer32), (.integer16, .integer64), (.integer32, .integer64), (.float, .double): return true
        default: return self == other
        }
    }

    /// Whether values of this type are numbers (arithmetic and numeric comparison apply).
    var isNumeric: Bool {
        switch kind {
        case .integer16, .integer32, .integer64, .double, .float, .boolean, .date, .decimal: return true
        default: return false
        }
    }

    /// Whether values of this type are floating-point numbers (`Double`, `Float`, `Date`), whose
    /// NaN is stored as a blob (see ``StoredValue/init(double:)``).
    package var isFloatingPoint: Bool {
        switch kind {
        case .double, .float, .date: return true
        default: return false
        }
    }

    /// Whether values of this type may be −0.0, stored as a blob (`Double`, `Float`; a `Date`'s
    /// −0.0 is the instant 0).
    var keepsNegativeZero: Bool { kind == .double || kind == .float }

    /// Whether values of this type are stored as integers.
    var isInteger: Bool {
        switch kind {
        case .integer16, .integer32, .integer64, .boolean: return true
        default: return false
        }
    }

    /// Checks that `value` is a valid stored form for this type.
    package func accepts(_ value: StoredValue) -> Bool {
        switch (kind, value) {
        case (_, .null): return true
        case (.integer16, .integer(let v)): return v >= Int64(Int16.min) && v <= Int64(Int16.max)
        case (.integer32, .integer(let v)): return v >= Int64(Int32.min) && v <= Int64(Int32.max)
        case (.integer64, .integer): return true
        case (.boolean, .integer(let v)): return v == 0 || v == 1
        case (.double, .real), (.float, .real), (.date, .real): return true
        case (.double, .blob), (.float, .blob), (.date, .blob): return value.isSpecialReal
        case (.string, .text), (.uri, .text): return true
        case (.decimal, .text(let s)): return DecimalText.parse(s) != nil  // "NaN" included: how `Decimal.nan` is stored
        case (.binaryData, .blob), (.transformable, .blob): return true
        case (.uuid, .blob(let d)): return d.count == 16
        default: return false
        }
    }
}
