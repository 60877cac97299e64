import Foundation

/// Evaluates ``QueryExpression``s and ``SortKey``s in memory, with the same semantics as the SQL
/// they are translated to (see ``QueryExpression``): three-valued logic, null-safe `==` / `!=`,
/// text by UTF-8 bytes, decimals numerically, floating-point values as Swift compares them,
/// SQLite's ordering of mixed types.
///
/// Scope 0 is the row being tested; `.anyMatch` / `.allMatch` bind their destinations to their
/// scope while evaluating their predicate. `.anyMatch` is true when the predicate is *true* for
/// some destination (SQL `EXISTS (… WHERE p)`); `.allMatch` when it is *true* for every one, an
/// unknown result counting as a failure (SQL `NOT EXISTS (… WHERE (p) IS NOT TRUE)`). Both are
/// never unknown. `.count` through a nil to-one is 0 (the compiler wraps optional chains so
/// they give nil, as in Swift).
package enum QueryEvaluator {
    /// Whether `row` satisfies `expression` (true only when the predicate is *true*, not unknown).
    package static func matches(_ expression: QueryExpression, row: any QueryRow) -> Bool {
        var scopes = Scopes(root: row)
        return truth(expression, &scopes) == true
    }

    /// The value of `expression` for `row`. Conditions give 1, 0 or nil (unknown); object
    /// references give the object's primary key (nil for no object).
    package static func value(_ expression: QueryExpression, row: any QueryRow) -> StoredValue {
        var scopes = Scopes(root: row)
        switch evaluate(expression, &scopes) {
        case .stored(let v): return v
        case .object(let id): return .integer(id.primaryKey)
        }
    }

    /// Whether `a` sorts before `b` by `keys` (nil first in ascending order, as SQLite; decimal
    /// attributes numerically; folded keys by their folded text).
    package static func areInIncreasingOrder(_ a: any QueryRow, _ b: any QueryRow, keys: [SortKey]) -> Bool {
        for key in keys {
            var sa = Scopes(root: a), sb = Scopes(root: b)
            var va = evaluate(.path(key.path), &sa), vb = evaluate(.path(key.path), &sb)
            if key.folded {
                va = fold(va)
                vb = fold(vb)
            }
            let c = order(va, vb, in: domain(.path(key.path)))
            if c != 0 { return key.ascending ? c < 0 : c > 0 }
        }
        return false
    }

    // MARK: Values

    /// A value during evaluation: stored form, or an object reference.
    enum Value {
        case stored(StoredValue)
        case object(ObjectID)

        static let null = Value.stored(.null)

        var isNull: Bool {
            if case .stored(.null) = self { return true }
            return false
        }

        static func bool(_ b: Bool?) -> Value {
            guard let b else { return .null }
            return .stored(.integer(b ? 1 : 0))
        }
    }

    /// The rows bound to each scope.
    struct Scopes {
        var rows: [(any QueryRow)?]
        init(root: any QueryRow) { rows = [root] }

        subscript(scope: Int) -> (any QueryRow)? {
            get { scope >= 0 && scope < rows.count ? rows[scope] : nil }
            set {
                guard scope >= 0 else { return }
                while rows.count <= scope { rows.append(nil) }
                rows[scope] = newValue
            }
        }
    }

    /// The object a path's relationships lead to (nil when a to-one along the way is nil).
    static func object(at path: PropertyPath, _ scopes: inout Scopes) -> (any QueryRow)? {
        guard var row = scopes[path.scope] else { return nil }
        for relationship in path.relationships {
            guard let next = row.queryToOne(relationship) else { return nil }
            row = next
        }
        return row
    }

    static func evaluate(_ e: QueryExpression, _ scopes: inout Scopes) -> Value {
        switch e {
        case .constant(let v):
            return .stored(v)
        case .object(let id):
            return id.map { .object($0) } ?? .null
        case .path(let path):
            guard let row = object(at: path, &scopes) else { return .null }
            guard let attribute = path.attribute else { return .object(row.queryObjectID) }
            return .stored(row.queryValue(at: attribute.slot))
        case .compare, .and, .or, .not, .isNull, .string, .inList, .between, .anyMatch, .allMatch:
            return .bool(truth(e, &scopes))
        case .arithmetic(let op, let a, let b):
            let floatingPoint = isFloatingPoint(e)
            return .stored(
                arithmetic(
                    op, number(evaluate(a, &scopes), floatingPoint: floatingPoint),
                    number(evaluate(b, &scopes), floatingPoint: floatingPoint), floatingPoint: floatingPoint))
        case .negate(let x):
            return .stored(negate(number(evaluate(x, &scopes), floatingPoint: isFloatingPoint(x)), floatingPoint: isFloatingPoint(x)))
        case .fold(let x, let options):
            return fold(evaluate(x, &scopes), options: options)
        case .coalesce(let a, let b):
            let v = evaluate(a, &scopes)
            return v.isNull ? evaluate(b, &scopes) : v
        case .conditional(let c, let a, let b):
            return truth(c, &scopes) == true ? evaluate(a, &scopes) : evaluate(b, &scopes)
        case .count(let path):
            guard let base = object(at: path.base, &scopes) else { return .stored(.integer(0)) }
            return .stored(.integer(Int64(base.queryToMany(path.relationship).count)))
        }
    }

    /// The truth of a condition: true, false or nil (unknown).
    static func truth(_ e: QueryExpression, _ scopes: inout Scopes) -> Bool? {
        switch e {
        case .and(let xs):
            var unknown = false
            for x in xs {
                switch truth(x, &scopes) {
                case false?: return false
                case nil: unknown = true
                case true?: break
                }
            }
            return unknown ? nil : true
        case .or(let xs):
            var unknown = false
            for x in xs {
                switch truth(x, &scopes) {
                case true?: return true
                case nil: unknown = true
                case false?: break
                }
            }
            return unknown ? nil : false
        case .not(let x):
            return truth(x, &scopes).map { !$0 }
        case .isNull(let x):
            return evaluate(x, &scopes).isNull
        case .compare(let op, let a, let b):
            return compare(op, evaluate(a, &scopes), evaluate(b, &scopes), in: domain(a, b))
        case .string(let op, let a, let b):
            guard let s = text(evaluate(a, &scopes)), let t = text(evaluate(b, &scopes)) else { return nil }
            switch op {
            case .contains: return TextSearch.contains(s, t)
            case .beginsWith: return TextSearch.hasPrefix(s, t)
            case .endsWith: return TextSearch.hasSuffix(s, t)
            case .like: return TextPattern.like(s, t)
            case .matches: return TextPattern.matches(s, t)
            }
        case .inList(let x, let xs):
            let v = evaluate(x, &scopes)
            let domain = domain(x)
            for candidate in xs where compare(.equal, v, evaluate(candidate, &scopes), in: domain) == true {
                return true
            }
            return false
        case .between(let x, let lower, let upper, let inclusive):
            let domain = domain(x, lower, upper)
            let v = evaluate(x, &scopes)
            let low = compare(.greaterOrEqual, v, evaluate(lower, &scopes), in: domain)
            if low == false { return false }
            let high = compare(inclusive ? .lessOrEqual : .less, v, evaluate(upper, &scopes), in: domain)
            if high == false { return false }
            return (low == true && high == true) ? true : nil
        case .anyMatch(let path, let scope, let predicate):
            guard let base = object(at: path.base, &scopes) else { return false }
            let saved = scopes[scope]
            defer { scopes[scope] = saved }
            for row in base.queryToMany(path.relationship) {
                scopes[scope] = row
                if truth(predicate, &scopes) == true { return true }
            }
            return false
        case .allMatch(let path, let scope, let predicate):
            guard let base = object(at: path.base, &scopes) else { return true }
            let saved = scopes[scope]
            defer { scopes[scope] = saved }
            for row in base.queryToMany(path.relationship) {
                scopes[scope] = row
                if truth(predicate, &scopes) != true { return false }
            }
            return true
        case .conditional(let c, let a, let b):
            return truth(c, &scopes) == true ? truth(a, &scopes) : truth(b, &scopes)
        case .constant, .object, .path, .arithmetic, .negate, .fold, .coalesce, .count:
            return truthiness(evaluate(e, &scopes))
        }
    }

    /// A value used as a condition, as SQLite does: nil is unknown, numbers are true unless 0.
    static func truthiness(_ v: Value) -> Bool? {
        switch v {
        case .object: return true
        case .stored(let s):
            switch number(.stored(s)) {
            case .integer(let i): return i != 0
            case .real(let d): return d != 0
            default: return nil
            }
        }
    }

    // MARK: Comparison

    /// How the values of a comparison compare. When operands differ, the greater domain wins.
    enum Domain: Int, Comparable {
        /// As they are (SQLite's order of mixed types).
        case plain
        /// As floating-point numbers, as Swift compares them: NaN (stored as a blob, see
        /// `StoredValue(double:)`) is unordered and unequal to everything, −0.0 equals 0.0.
        case floatingPoint
        /// As decimal numbers (decimal text compared numerically).
        case decimal

        static func < (lhs: Domain, rhs: Domain) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The domain in which a value compares. (Not variadic: it is asked per row.)
    static func domain(_ a: QueryExpression) -> Domain {
        isDecimal(a) ? .decimal : (isFloatingPoint(a) ? .floatingPoint : .plain)
    }

    /// The domain in which two values compare: decimal when one is decimal, else floating point
    /// when one is floating point.
    static func domain(_ a: QueryExpression, _ b: QueryExpression) -> Domain { max(domain(a), domain(b)) }

    /// The domain in which three values compare.
    static func domain(_ a: QueryExpression, _ b: QueryExpression, _ c: QueryExpression) -> Domain {
        max(domain(a), domain(b), domain(c))
    }

    /// Whether a value comes from a `Double`, `Float` or `Date` attribute: directly, through
    /// `??` / `?:`, or by arithmetic on one; or is a floating-point division (`realDivide`).
    /// Such a value may be NaN or −0.0 in blob form.
    static func isFloatingPoint(_ e: QueryExpression) -> Bool {
        switch e {
        case .path(let p): return p.attribute?.type.isFloatingPoint ?? false
        case .arithmetic(.realDivide, _, _): return true
        case .coalesce(let a, let b), .conditional(_, let a, let b), .arithmetic(_, let a, let b):
            return isFloatingPoint(a) || isFloatingPoint(b)
        case .negate(let x): return isFloatingPoint(x)
        default: return false
        }
    }

    /// A floating-point value in the form it compares and sorts in: −0.0 as 0, NaN as its blob
    /// (which sorts after every number, NaNs by their bits, as SQLite orders blobs); other values
    /// as they are.
    static func comparable(floatingPoint v: StoredValue) -> StoredValue {
        switch v {
        case .real(let d) where d.isNaN: return StoredValue(double: d)
        case .blob where v.isSpecialReal: return v.doubleValue.map { $0.isNaN ? v : .real(0) } ?? v
        default: return v
        }
    }

    /// Whether a stored value is a number (an integer or a real).
    static func isNumber(_ v: StoredValue) -> Bool {
        switch v {
        case .integer, .real: return true
        default: return false
        }
    }

    /// Whether one of `expressions` is a decimal attribute's value (directly or through `??` /
    /// `?:`): only then do they compare as decimals; constants alone compare as their text.
    package static func comparesAsDecimals(_ expressions: QueryExpression...) -> Bool {
        expressions.contains { isDecimal($0) }
    }

    /// Whether a value comes straight from a decimal attribute (or through `??` / `?:`).
    static func isDecimal(_ e: QueryExpression) -> Bool {
        switch e {
        case .path(let p): return p.attribute?.type == .decimal
        case .coalesce(let a, let b): return isDecimal(a) || isDecimal(b)
        case .conditional(_, let a, let b): return isDecimal(a) || isDecimal(b)
        default: return false
        }
    }

    /// A comparison with SQL's semantics: `==` / `!=` are null-safe, the others unknown with nil.
    /// Floating-point values compare as in Swift: with NaN, `!=` is true and the others false.
    static func compare(_ op: ComparisonOperator, _ a: Value, _ b: Value, in domain: Domain) -> Bool? {
        if domain == .floatingPoint, case .stored(let x) = a, case .stored(let y) = b, !x.isNull, !y.isNull {
            let fx = comparable(floatingPoint: x), fy = comparable(floatingPoint: y)
            if fx.isSpecialReal || fy.isSpecialReal { return op == .notEqual }  // NaN: unordered
            return compare(op, .stored(fx), .stored(fy), in: .plain)
        }
        switch op {
        case .equal, .notEqual:
            let equal: Bool
            switch (a, b) {
            case (.object(let x), .object(let y)): equal = x == y
            case (.object, _), (_, .object): equal = false
            case (.stored(let x), .stored(let y)):
                if x.isNull || y.isNull { equal = x.isNull && y.isNull } else { equal = order(a, b, in: domain) == 0 }
            }
            return op == .equal ? equal : !equal
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if a.isNull || b.isNull { return nil }
            if case .object = a { return nil }
            if case .object = b { return nil }
            let c = order(a, b, in: domain)
            switch op {
            case .less: return c < 0
            case .lessOrEqual: return c <= 0
            case .greater: return c > 0
            default: return c >= 0
            }
        }
    }

    /// SQLite's order of two values; decimals (text) numerically in the decimal domain;
    /// floating-point values with −0.0 as 0 and NaN after every number.
    static func order(_ a: Value, _ b: Value, in domain: Domain) -> Int {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            return x.primaryKey < y.primaryKey ? -1 : (x.primaryKey == y.primaryKey ? 0 : 1)
        case (.object, _): return 1
        case (_, .object): return -1
        case (.stored(let x), .stored(let y)):
            switch domain {
            case .decimal: if let c = decimalOrder(x, y) { return c }
            case .floatingPoint: return StoredValue.sqliteOrder(comparable(floatingPoint: x), comparable(floatingPoint: y))
            case .plain: break
            }
            return StoredValue.sqliteOrder(x, y)
        }
    }

    /// Numeric order of decimal values (text) against each other or against numbers.
    static func decimalOrder(_ a: StoredValue, _ b: StoredValue) -> Int? {
        if case .text(let x) = a, case .text(let y) = b { return DecimalText.compare(x, y) }
        func decimal(_ v: StoredValue) -> Decimal? {
            switch v {
            case .text(let s): return DecimalText.parse(s)
            case .integer(let i): return Decimal(i)
            case .real(let d): return d.isFinite ? Decimal(d) : nil
            default: return nil
            }
        }
        guard let x = decimal(a), let y = decimal(b) else { return nil }
        return x < y ? -1 : (x == y ? 0 : 1)
    }

    // MARK: Conversions and arithmetic

    static func fold(_ v: Value, options: TextFoldOptions = .caseAndDiacritics) -> Value {
        if case .stored(.text(let s)) = v { return .stored(.text(TextFolding.fold(s, options: options))) }
        return v
    }

    /// A value as text for string tests (numbers as SQLite prints them; nil otherwise).
    static func text(_ v: Value) -> String? {
        switch v {
        case .stored(.text(let s)): return s
        case .stored(.integer(let i)): return String(i)
        case .stored(.real(let d)): return String(d)
        default: return nil
        }
    }

    /// A value as a number: integers and reals as they are, numeric text converted as SQLite
    /// does (non-numeric text is 0), anything else nil. A floating-point value's NaN or −0.0 in
    /// blob form is a `.real` holding it.
    static func number(_ v: Value, floatingPoint: Bool = false) -> StoredValue {
        switch v {
        case .object(let id): return .integer(id.primaryKey)
        case .stored(let s):
            switch s {
            case .integer, .real: return s
            case .blob where floatingPoint && s.isSpecialReal: return s.doubleValue.map { .real($0) } ?? .null
            case .text(let t):
                let trimmed = t.trimmingCharacters(in: .whitespaces)
                if let i = Int64(trimmed) { return .integer(i) }
                if let d = Double(trimmed) { return .real(d) }
                return .integer(0)
            case .null, .blob: return .null
            }
        }
    }

    /// Arithmetic as SQLite does it, on numbers (see ``number(_:floatingPoint:)``). A real
    /// result that is NaN is nil, as in SQLite, unless `floatingPoint`: then NaN and −0.0 are
    /// kept, in the blob form of `StoredValue(double:)`, so the result compares as Swift's.
    /// Division (and `%`) by zero is nil, except a floating-point division (`realDivide`) when
    /// `floatingPoint`: that gives an infinity or NaN, as Swift's `/` on `Double` does.
    static func arithmetic(_ op: ArithmeticOperator, _ a: StoredValue, _ b: StoredValue, floatingPoint: Bool = false) -> StoredValue {
        func real(_ v: StoredValue) -> Double? {
            switch v {
            case .integer(let i): return Double(i)
            case .real(let d): return d
            default: return nil
            }
        }
        if case .integer(let x) = a, case .integer(let y) = b, op != .realDivide {
            let result: (partialValue: Int64, overflow: Bool)
            switch op {
            case .add: result = x.addingReportingOverflow(y)
            case .subtract: result = x.subtractingReportingOverflow(y)
            case .multiply: result = x.multipliedReportingOverflow(by: y)
            case .divide:
                if y == 0 { return .null }
                result = x.dividedReportingOverflow(by: y)
            case .remainder:
                if y == 0 { return .null }
                if y == -1 { return .integer(0) }
                result = x.remainderReportingOverflow(dividingBy: y)
            case .realDivide: result = (0, true)
            }
            if !result.overflow { return .integer(result.partialValue) }
            // SQLite continues in floating point when an integer operation overflows.
            return arithmetic(op == .divide ? .realDivide : op, .real(Double(x)), .real(Double(y)), floatingPoint: floatingPoint)
        }
        guard let x = real(a), let y = real(b) else { return .null }
        func result(_ d: Double) -> StoredValue {
            floatingPoint ? StoredValue(double: d) : (d.isNaN ? .null : .real(d))
        }
        switch op {
        case .add: return result(x + y)
        case .subtract: return result(x - y)
        case .multiply: return result(x * y)
        case .divide: return y == 0 ? .null : result(x / y)
        case .realDivide: return y == 0 && !floatingPoint ? .null : result(x / y)
        case .remainder:
            // SQLite's % works on the operands converted to integers.
            guard let xi = Int64(exactly: x.rounded(.towardZero)), let yi = Int64(exactly: y.rounded(.towardZero)), yi != 0 else {
                return .null
            }
            return yi == -1 ? .real(0) : .real(Double(xi % yi))
        }
    }

    /// Unary minus on a number (see ``arithmetic(_:_:_:floatingPoint:)`` for `floatingPoint`).
    static func negate(_ v: StoredValue, floatingPoint: Bool = false) -> StoredValue {
        switch v {
        case .integer(let i): return i == .min ? .real(-Double(i)) : .integer(-i)
        case .real(let d): return floatingPoint ? StoredValue(double: -d) : .real(-d)
        default: return .null
        }
    }
}
