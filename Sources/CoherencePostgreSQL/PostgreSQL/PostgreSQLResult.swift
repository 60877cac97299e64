import CCoherencePostgreSQL
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

    /// A column value from its text form (`bytes`, as the server sent it) and type.
    static func value(_ bytes: UnsafeRawBufferPointer, type: UInt32) -> StoredValue {
        switch type {
        case int8OID, int2OID, int4OID, oidOID:
            return integer(bytes).map(StoredValue.integer) ?? .text(String(decoding: bytes, as: UTF8.self))
        case boolOID:
            return .integer(bytes.first == UInt8(ascii: "t") ? 1 : 0)
        case float4OID, float8OID:
            let text = String(decoding: bytes, as: UTF8.self)
            switch text {
            case "NaN": return StoredValue(double: .nan)
            case "Infinity": return .real(.infinity)
            case "-Infinity": return .real(-.infinity)
            default: return Double(text).map { StoredValue(double: $0) } ?? .text(text)
            }
        case byteaOID:
            return .blob(Self.bytes(hex: bytes))
        default:
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// The text PostgreSQL writes for a `numeric` (`numeric_out`) from its binary form: a
    /// count of base-10,000 digits, the weight of the first, the sign, the display scale, then
    /// the digits. Nil when the bytes are not one.
    static func numeric(binary bytes: UnsafeRawBufferPointer) -> String? {
        guard bytes.count >= 8 else { return nil }
        func int16(_ offset: Int) -> Int { Int(Int16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int16.self))) }
        let count = int16(0), weight = int16(2), sign = UInt16(truncatingIfNeeded: int16(4)), scale = int16(6)
        guard count >= 0, scale >= 0, bytes.count == 8 + 2 * count else { return nil }
        switch sign {
        case 0xC000: return "NaN"
        case 0xD000: return "Infinity"
        case 0xF000: return "-Infinity"
        case 0x0000, 0x4000: break
        default: return nil
        }
        func digit(_ i: Int) -> Int { i >= 0 && i < count ? int16(8 + 2 * i) : 0 }
        func padded(_ d: Int) -> String {
            let s = String(d)
            return String(repeating: "0", count: max(0, 4 - s.count)) + s
        }
        var text = sign == 0x4000 ? "-" : ""
        if weight < 0 {
            text += "0"
        } else {
            for i in 0...weight { text += i == 0 ? String(digit(0)) : padded(digit(i)) }
        }
        if scale > 0 {
            var fraction = ""
            var i = weight + 1
            while fraction.count < scale {
                fraction += padded(digit(i))
                i += 1
            }
            text += "." + fraction.prefix(scale)
        }
        return text
    }

    /// The integer written in decimal in `bytes` (an optional `-`, then digits), or nil when it
    /// is not one or does not fit in 64 bits.
    static func integer(_ bytes: UnsafeRawBufferPointer) -> Int64? {
        guard let first = bytes.first else { return nil }
        let negative = first == UInt8(ascii: "-")
        var i = negative ? 1 : 0
        guard i < bytes.count else { return nil }
        // Accumulated negatively, so that Int64.min fits.
        var value: Int64 = 0
        while i < bytes.count {
            let digit = Int64(bytes[i]) - 48
            guard digit >= 0 && digit <= 9 else { return nil }
            let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
            let (next, o2) = shifted.subtractingReportingOverflow(digit)
            guard !o1 && !o2 else { return nil }
            value = next
            i += 1
        }
        if negative { return value }
        let (positive, overflow) = (0 as Int64).subtractingReportingOverflow(value)
        return overflow ? nil : positive
    }

    /// The bytes of `bytea`'s hex output (`\x0a1b…`).
    static func bytes(hex text: UnsafeRawBufferPointer) -> Data {
        var utf8 = text[...]
        if utf8.count >= 2, utf8[0] == UInt8(ascii: "\\"), utf8[1] == UInt8(ascii: "x") { utf8 = utf8.dropFirst(2) }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return 0
            }
        }
        var data = Data(capacity: utf8.count / 2)
        var i = utf8.startIndex
        while i + 1 < utf8.endIndex {
            data.append(nibble(utf8[i]) << 4 | nibble(utf8[i + 1]))
            i += 2
        }
        return data
    }
}

/// How one column of a binary result is read, chosen once per result from the column's type.
enum PostgreSQLColumnKind {
    case int8, int4, int2, oid, bool, float8, float4, bytea, numeric, text

    init(type: UInt32) {
        switch type {
        case PostgreSQLValue.int8OID: self = .int8
        case PostgreSQLValue.int4OID: self = .int4
        case PostgreSQLValue.int2OID: self = .int2
        case PostgreSQLValue.oidOID: self = .oid
        case PostgreSQLValue.boolOID: self = .bool
        case PostgreSQLValue.float8OID: self = .float8
        case PostgreSQLValue.float4OID: self = .float4
        case PostgreSQLValue.byteaOID: self = .bytea
        case PostgreSQLValue.numericOID: self = .numeric
        default: self = .text
        }
    }

    /// The value of a column of this kind from its binary form (`bytes`, as the server sent it
    /// with result format 1): the same value ``PostgreSQLValue/value(_:type:)`` reads from the
    /// text form, without parsing text.
    @inline(__always)
    func value(_ bytes: UnsafeRawBufferPointer) -> StoredValue {
        switch (self, bytes.count) {
        case (.int8, 8): return .integer(Int64(bigEndian: bytes.loadUnaligned(as: Int64.self)))
        case (.int4, 4): return .integer(Int64(Int32(bigEndian: bytes.loadUnaligned(as: Int32.self))))
        case (.int2, 2): return .integer(Int64(Int16(bigEndian: bytes.loadUnaligned(as: Int16.self))))
        case (.oid, 4): return .integer(Int64(UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self))))
        case (.bool, 1): return .integer(bytes[0] != 0 ? 1 : 0)
        case (.float8, 8): return StoredValue(double: Double(bitPattern: UInt64(bigEndian: bytes.loadUnaligned(as: UInt64.self))))
        case (.float4, 4): return StoredValue(double: Double(Float(bitPattern: UInt32(bigEndian: bytes.loadUnaligned(as: UInt32.self)))))
        case (.bytea, _): return .blob(Data(bytes))
        case (.numeric, _): return PostgreSQLValue.numeric(binary: bytes).map(StoredValue.text) ?? .null
        default: return .text(String(decoding: bytes, as: UTF8.self))
        }
    }
}

/// The rows of a libpq result, read where libpq keeps them (see
/// `PostgreSQLConnection.query(_:_:_:)`): valid only while the call that handed them over runs.
struct PostgreSQLRows {
    // Invariant: `result` is a successful libpq result that the connection clears only after
    // the body it was handed to has returned; nothing here outlives that body.
    private let result: OpaquePointer
    /// The number of rows and columns.
    let count: Int
    let columnCount: Int
    /// Each column's type object ID.
    private let types: [UInt32]
    /// How each column is read, when the values are in binary form.
    private let kinds: [PostgreSQLColumnKind]
    /// Whether the values are in binary form (result format 1) rather than text.
    let binary: Bool

    init(_ result: OpaquePointer, binary: Bool = false) {
        self.result = result
        self.binary = binary
        count = Int(PQntuples(result))
        columnCount = Int(PQnfields(result))
        types = (0..<Int32(columnCount)).map { PQftype(result, $0) }
        kinds = binary ? types.map(PostgreSQLColumnKind.init(type:)) : []
    }

    /// The value at `row`, `column` (both in range).
    @inline(__always)
    func value(_ row: Int32, _ column: Int32) -> StoredValue {
        // Only an empty value can be a NULL (libpq gives a NULL the length 0): most values cost
        // two calls into libpq, not three.
        let length = Int(PQgetlength(result, row, column))
        if length == 0 && PQgetisnull(result, row, column) != 0 { return .null }
        let bytes = UnsafeRawBufferPointer(start: PQgetvalue(result, row, column), count: length)
        return binary ? kinds[Int(column)].value(bytes) : PostgreSQLValue.value(bytes, type: types[Int(column)])
    }

    /// The integer at `row`, `column`, when it is one.
    func integer(_ row: Int32, _ column: Int32) -> Int64? {
        if binary, kinds[Int(column)] == .int8, PQgetlength(result, row, column) == 8, let p = PQgetvalue(result, row, column) {
            return Int64(bigEndian: UnsafeRawPointer(p).loadUnaligned(as: Int64.self))
        }
        guard case .integer(let v) = value(row, column) else { return nil }
        return v
    }
}
