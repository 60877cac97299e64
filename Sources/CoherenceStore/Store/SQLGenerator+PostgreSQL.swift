import Foundation

/// The PostgreSQL forms of the expressions whose SQL differs from SQLite's. PostgreSQL has real
/// booleans and typed columns: decimals are `NUMERIC` (no collation needed), text is
/// `COLLATE "C"` (code-point order), floating-point values are `DOUBLE PRECISION` holding NaN
/// and −0.0 themselves, and the pattern tests are written with `LIKE` and `~`.
extension QueryBuilder {
    /// Whether an expression is a test (a boolean in PostgreSQL) rather than a value.
    static func isTest(_ e: QueryExpression) -> Bool {
        switch e {
        case .compare, .and, .or, .not, .isNull, .string, .inList, .between, .anyMatch, .allMatch: return true
        case .constant, .object, .path, .arithmetic, .negate, .fold, .coalesce, .conditional, .count: return false
        }
    }

    /// Whether an expression is text (a string or URL attribute, text constant, or a fold,
    /// `??` or `?:` of one) — outside the decimal domain, where constants are decimal text.
    static func isText(_ e: QueryExpression) -> Bool {
        switch e {
        case .constant(.text), .fold: return true
        case .path(let p): return p.attribute.map { $0.type.kind == .string || $0.type.kind == .uri } ?? false
        case .coalesce(let a, let b), .conditional(_, let a, let b): return isText(a) || isText(b)
        default: return false
        }
    }

    /// Whether an expression is a numeric constant other than zero (NaN and the infinities
    /// included), so that dividing by it never divides by zero.
    static func isNonZeroConstant(_ e: QueryExpression) -> Bool {
        guard case .constant(let c) = e else { return false }
        switch c {
        case .integer(let i): return i != 0
        case .real, .blob: return c.doubleValue.map { $0 != 0 } ?? false
        default: return false
        }
    }

    /// SQL for an expression where a test is expected (a WHERE clause, an operand of AND, OR
    /// and NOT, a condition). SQLite has no booleans; in PostgreSQL a value is a test when it
    /// is not 0, as in SQLite.
    func condition(_ e: QueryExpression) throws(CoherenceError) -> String {
        guard dialect == .postgreSQL, !Self.isTest(e) else { return try sql(e) }
        return "(\(try value(e)) <> 0)"
    }

    /// SQL for an expression where a value is expected: in PostgreSQL a test's boolean is
    /// turned into 1 or 0 (NULL stays NULL), as SQLite's tests give.
    func value(_ e: QueryExpression) throws(CoherenceError) -> String {
        guard dialect == .postgreSQL, Self.isTest(e) else { return try sql(e) }
        return "CAST(\(try sql(e)) AS INTEGER)"
    }

    /// A value in the floating-point domain: constants in the stored form of NaN and −0.0 (8-byte
    /// blobs) become numbers.
    private func floatingPointValue(_ e: QueryExpression) throws(CoherenceError) -> String {
        if case .constant(let c) = e, case .blob = c, let d = c.doubleValue { return "CAST(\(bind(.real(d))) AS DOUBLE PRECISION)" }
        return try value(e)
    }

    /// A decimal value (`test` and `value` are two translations of it, each binding its own
    /// parameters) in Swift's order of `Decimal`: NaN, which `NUMERIC` orders after every
    /// number, as −Infinity (which no `Decimal` is).
    static func decimalOrderPG(_ test: String, _ value: String) -> String {
        "(CASE WHEN CAST(\(test) AS NUMERIC) = 'NaN'::NUMERIC THEN '-Infinity'::NUMERIC ELSE CAST(\(value) AS NUMERIC) END)"
    }

    /// The PostgreSQL SQL of `e`, or nil when it is the same as SQLite's.
    func postgreSQL(_ e: QueryExpression) throws(CoherenceError) -> String? {
        switch e {
        case .constant(.text(let t)) where t.utf8.contains(0):
            throw CoherenceError(
                .unsupportedPredicate, "PostgreSQL text cannot hold a NUL character (U+0000); a predicate cannot compare with one.")
        case .compare(let op, let a, let b):
            if QueryEvaluator.domain(a, b) == .floatingPoint { return try floatingPointComparisonPG(op, a, b) }
            if QueryEvaluator.domain(a, b) == .decimal && op != .equal && op != .notEqual {
                // Swift orders `Decimal.nan` before every number, `NUMERIC` after.
                let l = Self.decimalOrderPG(try value(a), try value(a)), r = Self.decimalOrderPG(try value(b), try value(b))
                return comparison(op, l, r)
            }
            let l = try value(a), r = try value(b)
            // Text orders by code point whatever the database's collation (columns are
            // `COLLATE "C"` already; constants and their folds are not).
            let ordering = op != .equal && op != .notEqual && QueryEvaluator.domain(a, b) == .plain && (Self.isText(a) || Self.isText(b))
            return comparison(op, l, r, collate: ordering ? " COLLATE \"C\"" : "")
        case .isNull(let x):
            return "(\(try value(x)) IS NULL)"
        case .coalesce(let a, let b):
            if QueryEvaluator.isFloatingPoint(e) { return "coalesce(\(try floatingPointValue(a)), \(try floatingPointValue(b)))" }
            return "coalesce(\(try value(a)), \(try value(b)))"
        case .conditional(let c, let a, let b):
            let test = try condition(c)
            if QueryEvaluator.isFloatingPoint(e) {
                return "(CASE WHEN \(test) THEN \(try floatingPointValue(a)) ELSE \(try floatingPointValue(b)) END)"
            }
            return "(CASE WHEN \(test) THEN \(try value(a)) ELSE \(try value(b)) END)"
        case .arithmetic(let op, let a, let b):
            let l = try floatingPointValue(a), r = try floatingPointValue(b)
            switch op {
            case .add: return "(\(l) + \(r))"
            case .subtract: return "(\(l) - \(r))"
            case .multiply: return "(\(l) * \(r))"
            // Integer division by zero is NULL, as in SQLite (PostgreSQL raises an error).
            case .divide: return "(\(l) / NULLIF(\(r), 0))"
            case .realDivide:
                // Swift divides by zero to an infinity or NaN, PostgreSQL raises an error: only a
                // divisor that cannot be zero (a constant other than zero) is translated.
                guard Self.isNonZeroConstant(b) else {
                    throw CoherenceError(
                        .unsupportedPredicate,
                        "Floating-point division: on PostgreSQL the divisor must be a constant other than zero (Swift divides by zero to an infinity or NaN, PostgreSQL raises an error)."
                    )
                }
                return "(CAST(\(l) AS DOUBLE PRECISION) / \(r))"
            case .remainder: return "(\(l) % NULLIF(\(r), 0))"
            }
        case .negate(let x):
            return "(- \(try floatingPointValue(x)))"
        case .string(let op, let a, let b):
            let l = try sql(a)
            switch op {
            case .contains: return "(strpos(\(l), \(try sql(b))) > 0)"
            case .beginsWith: return "starts_with(\(l), \(try sql(b)))"
            case .endsWith:
                let r1 = try sql(b), r2 = try sql(b)
                return "(right(\(l), length(\(r1))) = \(r2))"
            case .like:
                // `*` and `?` are the wildcards; LIKE's own (`%`, `_`, `\`) are escaped.
                let r = try sql(b)
                return
                    "(\(l) LIKE replace(replace(replace(replace(replace(\(r), '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%'), '?', '_'))"
            case .matches:
                // Only patterns PostgreSQL reads as ICU does (see `PostgreSQLRegex`).
                guard case .constant(.text(let pattern)) = b else {
                    throw CoherenceError(
                        .unsupportedPredicate,
                        "matches: on PostgreSQL, a regular expression must be a constant (it is translated from ICU syntax).")
                }
                guard let translated = PostgreSQLRegex.translate(pattern) else {
                    throw CoherenceError(
                        .unsupportedPredicate,
                        "matches: the regular expression uses ICU syntax PostgreSQL reads differently (character classes such as \\d, \\w, \\b or \\p{…}, anchors, lazy quantifiers, look-arounds, or non-ASCII letters with case-insensitivity); it cannot be translated."
                    )
                }
                return "(\(l) ~ \(bind(.text(translated))))"
            }
        case .inList(let x, let values):
            if values.isEmpty { return dialect.falseSQL }
            if QueryEvaluator.domain(x) == .floatingPoint { return try floatingPointMembershipPG(x, values) }
            let nonNull = values.filter { v in
                if case .constant(.null) = v { return false }
                if case .object(nil) = v { return false }
                return true
            }
            var parts: [String] = []
            if !nonNull.isEmpty {
                let l = try value(x)
                if QueryEvaluator.domain(x) == .plain, let list = longList(nonNull) {
                    parts.append("coalesce(\(l) = ANY(\(list.sql)::\(list.elementType)[]), FALSE)")
                } else {
                    var items: [String] = []
                    for v in nonNull { items.append(try value(v)) }
                    parts.append("coalesce(\(l) IN (\(items.joined(separator: ", "))), FALSE)")
                }
            }
            if nonNull.count < values.count { parts.append("(\(try value(x)) IS NULL)") }
            return "(" + parts.joined(separator: " OR ") + ")"
        case .between(let x, let lower, let upper, let inclusive):
            if QueryEvaluator.domain(x, lower, upper) == .floatingPoint {
                return try sql(.and([.compare(.greaterOrEqual, x, lower), .compare(inclusive ? .lessOrEqual : .less, x, upper)]))
            }
            if QueryEvaluator.domain(x, lower, upper) == .decimal {
                // Every operand as a number (two constants too), NaN as Swift orders it.
                let l = Self.decimalOrderPG(try value(x), try value(x)), lo = Self.decimalOrderPG(try value(lower), try value(lower))
                if inclusive { return "(\(l) BETWEEN \(lo) AND \(Self.decimalOrderPG(try value(upper), try value(upper))))" }
                let l2 = Self.decimalOrderPG(try value(x), try value(x)), hi = Self.decimalOrderPG(try value(upper), try value(upper))
                return "(\(l) >= \(lo) AND \(l2) < \(hi))"
            }
            let text = QueryEvaluator.domain(x, lower, upper) == .plain && (Self.isText(x) || Self.isText(lower) || Self.isText(upper))
            let collate = text ? " COLLATE \"C\"" : ""
            let l = try value(x), lo = try value(lower)
            if inclusive { return "((\(l))\(collate) BETWEEN \(lo) AND \(try value(upper)))" }
            let l2 = try value(x), hi = try value(upper)
            return "((\(l))\(collate) >= \(lo) AND (\(l2))\(collate) < \(hi))"
        default:
            return nil
        }
    }

    /// A floating-point comparison as Swift makes it: NaN unordered and unequal to everything
    /// (PostgreSQL orders NaN after every number and equal to itself), −0.0 equal to 0.0 (as in
    /// PostgreSQL).
    private func floatingPointComparisonPG(_ op: ComparisonOperator, _ a: QueryExpression, _ b: QueryExpression) throws(CoherenceError)
        -> String
    {
        if case .path(let p) = a, p.attribute != nil, case .constant(let c) = b, let s = try columnComparisonPG(op, p, c) { return s }
        if case .constant(let c) = a, case .path(let p) = b, p.attribute != nil, let s = try columnComparisonPG(op.mirrored, p, c) {
            return s
        }
        // Operands are translated where they appear, so that parameters bind in order.
        let unordered = op == .notEqual ? "TRUE" : "FALSE"
        let l1 = try operand(a), r1 = try operand(b), l2 = try operand(a), r2 = try operand(b)
        let l3 = try operand(a), r3 = try operand(b), l4 = try operand(a), r4 = try operand(b)
        let nan = "'NaN'::DOUBLE PRECISION"
        return "(CASE WHEN \(l1) IS NULL OR \(r1) IS NULL THEN \(comparison(op, l2, r2)) "
            + "WHEN \(l3) = \(nan) OR \(r3) = \(nan) THEN \(unordered) ELSE \(comparison(op, l4, r4)) END)"
    }

    /// An operand of a floating-point test, as a `DOUBLE PRECISION` (constants in the stored
    /// form of NaN and −0.0 become numbers).
    private func operand(_ e: QueryExpression) throws(CoherenceError) -> String {
        if case .constant(let c) = e {
            if c.isNull { return "CAST(NULL AS DOUBLE PRECISION)" }
            if let d = c.doubleValue { return "CAST(\(bind(.real(d))) AS DOUBLE PRECISION)" }
        }
        return "CAST(\(try value(e)) AS DOUBLE PRECISION)"
    }

    /// `column op constant` for a floating-point column, or nil when the constant is not a
    /// number or NaN.
    private func columnComparisonPG(_ op: ComparisonOperator, _ path: PropertyPath, _ constant: StoredValue) throws(CoherenceError)
        -> String?
    {
        let c = QueryEvaluator.comparable(floatingPoint: constant)
        let column = try pathSQL(path)
        if c.isSpecialReal {  // NaN: only `!=` holds, for every row (nil included, as `==` is null-safe)
            switch op {
            case .equal: return "FALSE"
            case .notEqual: return "TRUE"
            default: return "(CASE WHEN \(column) IS NULL THEN NULL ELSE FALSE END)"
            }
        }
        switch c {
        case .integer, .real: break
        default: return nil
        }
        let value = bind(c)
        switch op {
        case .equal, .notEqual, .less, .lessOrEqual: return comparison(op, column, value)  // a NaN row is greater
        case .greater, .greaterOrEqual: return "(\(column) \(op.rawValue) \(value) AND \(column) <> 'NaN')"
        }
    }

    /// Whether a floating-point value is in a list, each element compared as by `==`.
    private func floatingPointMembershipPG(_ x: QueryExpression, _ values: [QueryExpression]) throws(CoherenceError) -> String {
        var constants: [StoredValue] = []
        for v in values {
            guard case .constant(let c) = v else { break }
            constants.append(QueryEvaluator.comparable(floatingPoint: c))
        }
        guard case .path(let p) = x, p.attribute != nil, constants.count == values.count,
            constants.allSatisfy({ $0.isNull || $0.isSpecialReal || QueryEvaluator.isNumber($0) })
        else {
            return try sql(.or(values.map { .compare(.equal, x, $0) }))
        }
        let column = try pathSQL(p)
        let numbers = constants.filter(QueryEvaluator.isNumber)
        var parts: [String] = []
        if !numbers.isEmpty { parts.append("coalesce(\(column) IN (\(numbers.map { bind($0) }.joined(separator: ", "))), FALSE)") }
        if constants.contains(where: \.isNull) { parts.append("(\(column) IS NULL)") }
        return parts.isEmpty ? "FALSE" : "(" + parts.joined(separator: " OR ") + ")"
    }
}

extension SQLGenerator {
    /// The functions a PostgreSQL store's schema holds: `coherence_fold(text)` and
    /// `coherence_fold(text, integer)`, the folding of ``TextFolding`` (see
    /// ``PostgreSQLTextFolding``).
    package func createFunctions() -> [String] {
        dialect == .postgreSQL ? PostgreSQLTextFolding.functions : []
    }
}
