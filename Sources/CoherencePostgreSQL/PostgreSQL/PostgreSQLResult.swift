import Foundation

/// The rows a statement returned, read out of libpq's result at once (nothing points into it
/// afterwards), and how many rows it changed.
struct PostgreSQLResult: Sendable {
    /// The rows, each with one value per column.
    var rows: [[StoredValue]] = []
    /// The number of rows an INSERT, UPDATE or DELETE changed (0 for other statements).
    var affectedRows: Int = 0

    /// The first column of the first row as an integer, if any.
    var firstInteger: Int64? {
        guard let first = rows.first?.first, case .integer(let v) = first else { return nil }
        return v
    }
}

/// How values cross libpq: parameters as text (bytes as binary), result columns read by their
/// type's object ID.
enum PostgreSQLValue {
    /// Type object IDs (from PostgreSQL's `pg_type.dat`).
    static let boolOID: UInt32 = 16, byteaOID: UInt32 = 17, int8OID: UInt32 = 20, int2OID: UInt32 = 21
    static let int4OID: UInt32 = 23, oidOID: UInt32 = 26, float4OID: UInt32 = 700, float8OID: UInt32 = 701
    static let numericOID: UInt32 = 1700

    /// A parameter: its type (0 lets the server infer it from the statement, as for a literal),
    /// its bytes (nil for NULL) and whether they are binary.
    static func parameter(_ value: StoredValue) throws(PostgreSQLError) -> (type: UInt32, bytes: [UInt8]?, binary: Bool) {
        switch value {
        case .null: return (0, nil, false)
        case .integer(let v): return (int8OID, Array(String(v).utf8), false)
        case .real(let v): return (float8OID, Array(text(of: v).utf8), false)
        case .text(let s):
            let bytes = Array(s.utf8)
            if bytes.contains(0) {
                throw PostgreSQLError(
                    sqlState: "22021", message: "PostgreSQL text cannot hold a NUL character (U+0000).")
            }
            return (0, bytes, false)
        case .blob(let d): return (byteaOID, [UInt8](d), true)
        }
    }

    /// A `Double` as PostgreSQL's `float8` input reads it, exactly.
    static func text(of v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v < 0 ? "-Infinity" : "Infinity" }
        return v.description
    }

    /// A column value from its text form and type.
    static func value(text: String, type: UInt32) -> StoredValue {
        switch type {
        case int8OID, int2OID, int4OID, oidOID:
            return Int64(text).map(StoredValue.integer) ?? .text(text)
        case boolOID:
            return .integer(text == "t" ? 1 : 0)
        case float4OID, float8OID:
            switch text {
            case "NaN": return StoredValue(double: .nan)
            case "Infinity": return .real(.infinity)
            case "-Infinity": return .real(-.infinity)
            default: return Double(text).map { StoredValue(double: $0) } ?? .text(text)
            }
        case byteaOID:
            return .blob(bytes(hex: text))
        default:
            return .text(text)
        }
    }

    /// The bytes of `bytea`'s hex output (`\x0a1b…`).
    static func bytes(hex text: String) -> Data {
        var utf8 = Array(text.utf8)
        if utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x") { utf8.removeFirst(2) }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return 0
            }
        }
        var data = Data(capacity: utf8.count / 2)
        var i = 0
        while i + 1 < utf8.count {
            data.append(nibble(utf8[i]) << 4 | nibble(utf8[i + 1]))
            i += 2
        }
        return data
    }
}
