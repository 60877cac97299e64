import CCoherenceSQLite
import Foundation

/// SQL functions and collations Coherence registers on every connection, so that SQL and
/// in-memory evaluation agree.
package enum SQLFunctions {
    /// Collation decimal columns are declared with (and their indexes built in): compares
    /// decimal text numerically, NaN after every number (``DecimalText/columnOrder(_:_:)``).
    /// Equality and IN use it, so they can read an index.
    static let decimalCollation = "COHERENCE_DECIMAL"
    /// Collation of decimal ordering comparisons and sorts: numerically, NaN before every
    /// number, as Swift's `Decimal` orders it (``DecimalText/compare(_:_:)``).
    static let decimalOrderCollation = "COHERENCE_DECIMAL_ORDER"
    /// `coherence_fold(text)`: case- and diacritic-folded text (for case-insensitive matching);
    /// `coherence_fold(text, options)` folds what the ``TextFoldOptions`` raw value names.
    static let foldFunction = "coherence_fold"
    /// `coherence_like(text, pattern)`: ``TextPattern/like(_:_:)`` — 1, 0 or NULL.
    static let likeFunction = "coherence_like"
    /// `coherence_matches(text, regex)`: ``TextPattern/matches(_:_:)`` — 1, 0 or NULL.
    static let matchesFunction = "coherence_matches"
    /// `coherence_compare(op, a, b)`: a comparison (`op` is a ``ComparisonOperator`` raw value)
    /// of floating-point values as ``QueryEvaluator`` makes it: 1, 0 or NULL (unknown).
    static let compareFunction = "coherence_compare"
    /// `coherence_arithmetic(op, a, b)`: arithmetic (`op` is an ``ArithmeticOperator`` raw
    /// value) on floating-point values as ``QueryEvaluator`` does it, NaN and −0.0 kept as blobs.
    static let arithmeticFunction = "coherence_arithmetic"
    /// `coherence_negate(x)`: unary minus on a floating-point value, as ``QueryEvaluator`` does it.
    static let negateFunction = "coherence_negate"

    package static func register(on connection: SQLiteConnection) throws(SQLiteError) {
        let db = connection.handle
        var rc = sqlite3_create_collation_v2(
            db, decimalCollation, SQLITE_UTF8, nil,
            { _, n1, p1, n2, p2 in
                let a = String(decoding: UnsafeRawBufferPointer(start: p1, count: Int(n1)), as: UTF8.self)
                let b = String(decoding: UnsafeRawBufferPointer(start: p2, count: Int(n2)), as: UTF8.self)
                return Int32(DecimalText.columnOrder(a, b))
            }, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
        rc = sqlite3_create_collation_v2(
            db, decimalOrderCollation, SQLITE_UTF8, nil,
            { _, n1, p1, n2, p2 in
                let a = String(decoding: UnsafeRawBufferPointer(start: p1, count: Int(n1)), as: UTF8.self)
                let b = String(decoding: UnsafeRawBufferPointer(start: p2, count: Int(n2)), as: UTF8.self)
                return Int32(DecimalText.compare(a, b))
            }, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
        rc = sqlite3_create_function_v2(
            db, foldFunction, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nil,
            { ctx, argc, argv in
                guard argc == 1, let argv, let arg = argv[0] else { sqlite3_result_null(ctx); return }
                guard sqlite3_value_type(arg) != SQLITE_NULL, let p = sqlite3_value_text(arg) else { sqlite3_result_null(ctx); return }
                let n = Int(sqlite3_value_bytes(arg))
                let folded = TextFolding.fold(String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self))
                SQLFunctions.setResult(ctx, .text(folded))
            }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
        // Floating-point comparisons and arithmetic call the evaluator, so both stores agree.
        let flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS
        rc = sqlite3_create_function_v2(
            db, foldFunction, 2, flags, nil,
            { ctx, argc, argv in
                guard argc == 2, let argv, let text = SQLFunctions.text(argv[0]) else { sqlite3_result_null(ctx); return }
                let options = TextFoldOptions(rawValue: Int(sqlite3_value_int64(argv[1])))
                SQLFunctions.setResult(ctx, .text(TextFolding.fold(text, options: options)))
            }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
        // Pattern tests evaluate as the in-memory evaluator does (text of numbers included).
        rc = sqlite3_create_function_v2(
            db, likeFunction, 2, flags, nil,
            { ctx, argc, argv in SQLFunctions.setPatternResult(ctx, argc, argv, TextPattern.like) }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
        rc = sqlite3_create_function_v2(
            db, matchesFunction, 2, flags, nil,
            { ctx, argc, argv in SQLFunctions.setPatternResult(ctx, argc, argv, TextPattern.matches) }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
        rc = sqlite3_create_function_v2(
            db, compareFunction, 3, flags, nil,
            { ctx, argc, argv in
                guard argc == 3, let argv, let op = SQLFunctions.text(argv[0]).flatMap(ComparisonOperator.init(rawValue:)) else {
                    sqlite3_result_null(ctx); return
                }
                let a = SQLFunctions.storedValue(argv[1]), b = SQLFunctions.storedValue(argv[2])
                switch QueryEvaluator.compare(op, .stored(a), .stored(b), in: .floatingPoint) {
                case true?: sqlite3_result_int(ctx, 1)
                case false?: sqlite3_result_int(ctx, 0)
                case nil: sqlite3_result_null(ctx)
                }
            }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
        rc = sqlite3_create_function_v2(
            db, arithmeticFunction, 3, flags, nil,
            { ctx, argc, argv in
                guard argc == 3, let argv, let op = SQLFunctions.text(argv[0]).flatMap(ArithmeticOperator.init(rawValue:)) else {
                    sqlite3_result_null(ctx); return
                }
                let a = QueryEvaluator.number(.stored(SQLFunctions.storedValue(argv[1])), floatingPoint: true)
                let b = QueryEvaluator.number(.stored(SQLFunctions.storedValue(argv[2])), floatingPoint: true)
                SQLFunctions.setResult(ctx, QueryEvaluator.arithmetic(op, a, b, floatingPoint: true))
            }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
        rc = sqlite3_create_function_v2(
            db, negateFunction, 1, flags, nil,
            { ctx, argc, argv in
                guard argc == 1, let argv else { sqlite3_result_null(ctx); return }
                let x = QueryEvaluator.number(.stored(SQLFunctions.storedValue(argv[0])), floatingPoint: true)
                SQLFunctions.setResult(ctx, QueryEvaluator.negate(x, floatingPoint: true))
            }, nil, nil, nil)
        guard rc == SQLITE_OK else { throw connection.error(code: rc, sql: nil) }
    }

    /// Returns the result of a pattern test of the two arguments' text: 1, 0, or NULL when an
    /// argument is NULL or the test is unknown.
    static func setPatternResult(
        _ ctx: OpaquePointer?, _ argc: Int32, _ argv: UnsafeMutablePointer<OpaquePointer?>?, _ test: (String, String) -> Bool?
    ) {
        guard argc == 2, let argv,
            let text = QueryEvaluator.text(.stored(storedValue(argv[0]))),
            let pattern = QueryEvaluator.text(.stored(storedValue(argv[1])))
        else { sqlite3_result_null(ctx); return }
        switch test(text, pattern) {
        case true?: sqlite3_result_int(ctx, 1)
        case false?: sqlite3_result_int(ctx, 0)
        case nil: sqlite3_result_null(ctx)
        }
    }

    /// A function argument's text, or nil when it is not text.
    static func text(_ value: OpaquePointer?) -> String? {
        guard let value, sqlite3_value_type(value) == SQLITE_TEXT, let p = sqlite3_value_text(value) else { return nil }
        return String(decoding: UnsafeBufferPointer(start: p, count: Int(sqlite3_value_bytes(value))), as: UTF8.self)
    }

    /// A function argument as a ``StoredValue``.
    static func storedValue(_ value: OpaquePointer?) -> StoredValue {
        guard let value else { return .null }
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(value))
        case SQLITE_TEXT: return text(value).map { .text($0) } ?? .null
        case SQLITE_BLOB:
            let n = Int(sqlite3_value_bytes(value))
            guard n > 0, let p = sqlite3_value_blob(value) else { return .blob(Data()) }
            return .blob(Data(bytes: p, count: n))
        default: return .null
        }
    }

    /// Returns a ``StoredValue`` from a function.
    static func setResult(_ ctx: OpaquePointer?, _ value: StoredValue) {
        switch value {
        case .null: sqlite3_result_null(ctx)
        case .integer(let i): sqlite3_result_int64(ctx, i)
        case .real(let d): sqlite3_result_double(ctx, d)
        case .text(let t):
            var t = t
            t.withUTF8 { buf in
                if let base = buf.baseAddress {
                    // Invariant: the bytes are valid for this call; SQLite copies them (TRANSIENT).
                    sqlite3_result_text(
                        ctx, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self),
                        Int32(buf.count), coherence_sqlite3_transient())
                } else {
                    sqlite3_result_text(ctx, "", 0, coherence_sqlite3_transient())
                }
            }
        case .blob(let d):
            d.withUnsafeBytes { buf in
                if let base = buf.baseAddress {
                    sqlite3_result_blob64(ctx, base, sqlite3_uint64(buf.count), coherence_sqlite3_transient())
                } else {
                    sqlite3_result_zeroblob(ctx, 0)
                }
            }
        }
    }
}
