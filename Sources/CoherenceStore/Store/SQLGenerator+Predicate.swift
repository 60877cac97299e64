import Foundation

/// Translates a ``QueryExpression`` to SQL for one statement: collects bound values (constants
/// are always parameters, so equal predicates share one cached statement) and the joins each
/// scope needs for to-one paths.
final class QueryBuilder {
    let generator: SQLGenerator
    let storeIdentifier: UUID
    private(set) var bindings: [StoredValue] = []
    private var scopes: [Scope] = []
    private var aliasCounter = 0

    final class Scope {
        let alias: String
        let entity: EntityDescription
        var joins: [String] = []
        var joinAliases: [String: String] = [:]
        init(alias: String, entity: EntityDescription) {
            self.alias = alias
            self.entity = entity
        }
    }

    init(generator: SQLGenerator, rootEntity: EntityDescription, storeIdentifier: UUID) {
        self.generator = generator
        self.storeIdentifier = storeIdentifier
        scopes = [Scope(alias: "t0", entity: rootEntity)]
    }

    /// The JOIN clauses collected for a scope.
    func joins(forScope scope: Int) -> String {
        guard scope < scopes.count else { return "" }
        return scopes[scope].joins.map { " " + $0 }.joined()
    }

    private func newAlias(_ prefix: String) -> String {
        aliasCounter += 1
        return "\(prefix)\(aliasCounter)"
    }

    private func scope(_ n: Int) throws(CoherenceError) -> Scope {
        guard n >= 0, n < scopes.count else {
            throw CoherenceError(.unsupportedPredicate, "Internal: predicate refers to unknown scope $\(n)")
        }
        return scopes[n]
    }

    func bind(_ v: StoredValue) -> String {
        bindings.append(v)
        return "?"
    }

    // MARK: Paths

    /// The alias of the row at the end of `relationships` from `scope`, adding LEFT JOINs.
    private func alias(scope n: Int, relationships: ArraySlice<RelationshipDescription>) throws(CoherenceError) -> String {
        let s = try scope(n)
        var alias = s.alias
        var key = ""
        for r in relationships {
            key += "." + r.name
            if let existing = s.joinAliases[key] { alias = existing; continue }
            guard let dest = r.destinationEntity else {
                throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no destination", property: r.name)
            }
            let next = newAlias("j")
            switch r.storage {
            case .foreignKey:
                s.joins.append("LEFT JOIN \(generator.table(dest)) AS \(next) ON \(next).Z_PK = \(alias).\(generator.column(r))")
            case .inverseForeignKey:
                guard let inverse = r.inverseRelationship else {
                    throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no inverse to join on", property: r.name)
                }
                // Nothing in the table stops two rows from naming the same source: join only the
                // one with the lowest key (the one a fault of the relationship and the in-memory
                // store see), so a repeated row does not list the source twice.
                let lowest = newAlias("k")
                var pick =
                    "SELECT min(\(lowest).Z_PK) FROM \(generator.table(dest)) AS \(lowest) "
                    + "WHERE \(lowest).\(generator.column(inverse)) = \(alias).Z_PK"
                if let restriction = generator.entityRestriction(dest, includesSubentities: true, alias: lowest) {
                    pick += " AND " + restriction
                }
                s.joins.append("LEFT JOIN \(generator.table(dest)) AS \(next) ON \(next).Z_PK = (\(pick))")
            case .joinTable:
                throw CoherenceError(.unsupportedPredicate, "'\(r.name)' is to-many; use contains(where:) or count", property: r.name)
            }
            s.joinAliases[key] = next
            alias = next
        }
        return alias
    }

    func pathSQL(_ p: PropertyPath) throws(CoherenceError) -> String {
        if let attribute = p.attribute {
            let a = try alias(scope: p.scope, relationships: p.relationships[...])
            return "\(a).\(generator.column(attribute))"
        }
        // An object reference: its primary key.
        guard let last = p.relationships.last else {
            return "\(try scope(p.scope).alias).Z_PK"
        }
        if last.hasForeignKey {
            let a = try alias(scope: p.scope, relationships: p.relationships.dropLast())
            return "\(a).\(generator.column(last))"
        }
        return "\(try alias(scope: p.scope, relationships: p.relationships[...])).Z_PK"
    }

    /// Whether a value is compared as a decimal: the same rule as the evaluator's (a decimal
    /// attribute, or `??` / `?:` choosing one). SQLite only carries a column's collation through
    /// a bare column reference, not through `coalesce(…)` or `CASE`, so the collation is always
    /// written out.
    private func isDecimal(_ e: QueryExpression) -> Bool {
        QueryEvaluator.isDecimal(e)
    }

    /// The collation of a comparison whose operands are not decimals: none, or `BINARY` when
    /// one of them holds a decimal test (a ternary's condition), whose `COLLATE` SQLite would
    /// otherwise compare the text in.
    private func plainCollation(_ operands: QueryExpression...) -> String {
        operands.contains(where: Self.testsDecimals) ? " COLLATE BINARY" : ""
    }

    /// Whether the SQL of `e` names a decimal collation (outside subqueries).
    private static func testsDecimals(_ e: QueryExpression) -> Bool {
        switch e {
        case .constant, .object, .path, .anyMatch, .allMatch, .count: return false
        case .compare(_, let a, let b):
            return (QueryEvaluator.domain(a, b) == .decimal) || testsDecimals(a) || testsDecimals(b)
        case .inList(let x, let values): return QueryEvaluator.isDecimal(x) || testsDecimals(x) || values.contains(where: testsDecimals)
        case .between(let x, let lower, let upper, _):
            return QueryEvaluator.domain(x, lower, upper) == .decimal || [x, lower, upper].contains(where: testsDecimals)
        case .and(let xs), .or(let xs): return xs.contains(where: testsDecimals)
        case .not(let x), .isNull(let x), .negate(let x), .fold(let x, _): return testsDecimals(x)
        case .arithmetic(_, let a, let b), .string(_, let a, let b), .coalesce(let a, let b): return testsDecimals(a) || testsDecimals(b)
        case .conditional(let c, let a, let b): return testsDecimals(c) || testsDecimals(a) || testsDecimals(b)
        }
    }

    // MARK: Expressions

    var dialect: SQLDialect { generator.dialect }

    /// Whether `e` is an object that no row `other` stands for can be: one of another store, one
    /// not saved yet (a temporary ID), or one of an entity outside the hierarchy of the objects
    /// `other` reaches (object IDs are equal only within one hierarchy, whose rows share keys).
    private func matchesNoRow(_ e: QueryExpression, of other: QueryExpression) -> Bool {
        guard case .object(let id?) = e else { return false }
        if id.storeIdentifier != storeIdentifier { return true }
        guard case .path(let p) = other, p.attribute == nil else { return false }
        let entity = p.relationships.last?.destinationEntity ?? (scopes.indices.contains(p.scope) ? scopes[p.scope].entity : nil)
        return entity.map { $0.rootEntity !== id.entity.rootEntity } ?? false
    }

    /// Lists of objects longer than this are bound as one parameter (see ``longKeyList(_:_:)``).
    static let longKeyListThreshold = 1_000

    /// The primary keys of a list of more than ``longKeyListThreshold`` objects, all of rows of
    /// this store, tested against `x` (an object reference), bound as one parameter
    /// (`SQLDialect.inList(_:)`) instead of one each: SQLite (32,766 by default) and PostgreSQL
    /// (65,535) limit the parameters of a statement, and `existing(_:withIDs:)` may pass more.
    /// Nil for any other list (long lists of constants are ``longList(_:)``'s).
    private func longKeyList(_ x: QueryExpression, _ values: [QueryExpression]) -> [Int64]? {
        guard values.count > Self.longKeyListThreshold, case .path(let p) = x, p.attribute == nil else { return nil }
        var keys: [Int64] = []
        keys.reserveCapacity(values.count)
        for v in values {
            guard case .object(let id?) = v, id.storeIdentifier == storeIdentifier else { return nil }
            keys.append(id.primaryKey)
        }
        return keys
    }

    /// Whether a to-one relationship kept in a foreign-key column names no object, for a
    /// comparison of the relationship with nil (`town == nil`, `town != nil`, a list holding
    /// nil, `isNull`): a value in the column that is not an integer key (text, a real number or
    /// a blob another program wrote; SQLite keeps them in an `INTEGER` column) names no object,
    /// as the object reads it (nil), so it is nil here too. Nil for any other expression.
    private func foreignKeyNullTest(_ e: QueryExpression) throws(CoherenceError) -> String? {
        func foreignKey(_ x: QueryExpression) -> Bool {
            guard case .path(let p) = x, p.attribute == nil, let last = p.relationships.last else { return false }
            return last.hasForeignKey
        }
        func isNil(_ x: QueryExpression) -> Bool {
            if case .object(nil) = x { return true }
            if case .constant(.null) = x { return true }
            return false
        }
        func test(_ x: QueryExpression) throws(CoherenceError) -> String {
            let column = try sql(x)
            return "(\(column) IS NULL OR typeof(\(column)) <> 'integer')"
        }
        switch e {
        case .compare(let op, let a, let b) where op == .equal || op == .notEqual:
            let operand: QueryExpression
            if foreignKey(a) && isNil(b) {
                operand = a
            } else if foreignKey(b) && isNil(a) {
                operand = b
            } else {
                return nil
            }
            return op == .equal ? try test(operand) : "(NOT \(try test(operand)))"
        case .isNull(let x) where foreignKey(x):
            return try test(x)
        case .inList(let x, let values) where foreignKey(x) && values.contains(where: isNil):
            let others = values.filter { !isNil($0) }
            return others.isEmpty ? try test(x) : "(\(try test(x)) OR \(try sql(.inList(x, others))))"
        default:
            return nil
        }
    }

    /// SQL for an expression.
    func sql(_ e: QueryExpression) throws(CoherenceError) -> String {
        // An object of no row here is equal to no row's object, nor to no object: its `NULL`
        // would make `==` (null-safe) match every row without one, and its key alone rows of
        // another entity.
        if case .compare(let op, let a, let b) = e, op == .equal || op == .notEqual, matchesNoRow(a, of: b) || matchesNoRow(b, of: a) {
            var equal = false
            if case .object(let x) = a, case .object(let y) = b { equal = x == y }
            return equal == (op == .equal) ? dialect.trueSQL : dialect.falseSQL
        }
        if case .inList(let x, let values) = e, values.contains(where: { matchesNoRow($0, of: x) }) {
            return try sql(.inList(x, values.filter { !matchesNoRow($0, of: x) }))
        }
        if case .inList(let x, let values) = e, let keys = longKeyList(x, values) {
            let l = try sql(x)
            _ = bind(.text(dialect.keyList(keys)))
            return "coalesce(\(dialect.inList(l)), \(dialect.falseSQL))"
        }
        if dialect == .sqlite, let test = try foreignKeyNullTest(e) { return test }
        if dialect == .postgreSQL, let translated = try postgreSQL(e) { return translated }
        switch e {
        case .constant(let v):
            return bind(v)
        case .object(let id):
            guard let id, id.storeIdentifier == storeIdentifier else { return "NULL" }
            return bind(.integer(id.primaryKey))
        case .path(let p):
            return try pathSQL(p)
        case .compare(let op, let a, let b):
            if QueryEvaluator.domain(a, b) == .floatingPoint { return try floatingPointComparison(op, a, b) }
            // Equality reads the column's own collation (and so its index); ordering puts NaN
            // first, as Swift's `Decimal` does.
            let ordering = op != .equal && op != .notEqual
            let collation = ordering ? SQLFunctions.decimalOrderCollation : SQLFunctions.decimalCollation
            let collate = isDecimal(a) || isDecimal(b) ? " COLLATE \(collation)" : plainCollation(a, b)
            // Both operands name the collation: SQLite takes the left operand's first COLLATE,
            // one nested in it too (a ternary's `x == d` condition names the column's).
            let l = try sql(a), r = try sql(b)
            return comparison(op, l + collate, r, collate: collate)
        case .and(let xs):
            if xs.isEmpty { return dialect.trueSQL }
            var parts: [String] = []
            for x in xs { parts.append(try condition(x)) }
            return Self.grouped(parts[...], " AND ")
        case .or(let xs):
            if xs.isEmpty { return dialect.falseSQL }
            var parts: [String] = []
            for x in xs { parts.append(try condition(x)) }
            return Self.grouped(parts[...], " OR ")
        case .not(let x):
            return "(NOT \(try condition(x)))"
        case .isNull(let x):
            return "(\(try sql(x)) IS NULL)"
        case .arithmetic(let op, let a, let b):
            let l = try sql(a), r = try sql(b)
            if QueryEvaluator.isFloatingPoint(e) { return "\(SQLFunctions.arithmeticFunction)('\(op.rawValue)', \(l), \(r))" }
            switch op {
            case .add: return "(\(l) + \(r))"
            case .subtract: return "(\(l) - \(r))"
            case .multiply: return "(\(l) * \(r))"
            case .divide: return "(\(l) / \(r))"
            case .realDivide: return "(CAST(\(l) AS REAL) / \(r))"
            case .remainder: return "(\(l) % \(r))"
            }
        case .negate(let x):
            if QueryEvaluator.isFloatingPoint(x) { return "\(SQLFunctions.negateFunction)(\(try sql(x)))" }
            return "(- \(try sql(x)))"
        case .fold(let x, let options):
            if options == .caseAndDiacritics { return "\(SQLFunctions.foldFunction)(\(try sql(x)))" }
            return "\(SQLFunctions.foldFunction)(\(try sql(x)), \(options.rawValue))"
        case .string(let op, let a, let b):
            // Prefixes and suffixes are cut from the UTF-8 bytes (text cast to a blob): on text,
            // `length` and `substr` count characters and stop at the first NUL. `substr` of an
            // empty blob is NULL, so an empty operand is tested first. (`instr` compares bytes,
            // and a match of valid UTF-8 can only start at a character.) Parameters are bound in
            // the order they appear in the text, so each operand is translated where it appears.
            let l = try sql(a)
            switch op {
            case .contains:
                return "(instr(\(l), \(try sql(b))) > 0)"
            case .beginsWith:
                let r1 = try sql(b), l2 = try sql(a), r2 = try sql(b), r3 = try sql(b)
                return
                    "(CASE WHEN \(l) = '' THEN \(r1) = '' ELSE substr(CAST(\(l2) AS BLOB), 1, length(CAST(\(r2) AS BLOB))) = CAST(\(r3) AS BLOB) END)"
            case .endsWith:
                let r1 = try sql(b), l2 = try sql(a), r2 = try sql(b), r3 = try sql(b), r4 = try sql(b), l3 = try sql(a)
                return
                    "(CASE WHEN \(l) = '' THEN \(r1) = '' ELSE (substr(CAST(\(l2) AS BLOB), -length(CAST(\(r2) AS BLOB))) = CAST(\(r3) AS BLOB) OR (length(CAST(\(r4) AS BLOB)) = 0 AND \(l3) IS NOT NULL)) END)"
            case .like:
                return "\(SQLFunctions.likeFunction)(\(l), \(try sql(b)))"
            case .matches:
                return "\(SQLFunctions.matchesFunction)(\(l), \(try sql(b)))"
            }
        case .inList(let x, let values):
            if values.isEmpty { return "0" }
            if QueryEvaluator.domain(x) == .floatingPoint { return try floatingPointMembership(x, values) }
            let collate = isDecimal(x) ? " COLLATE \(SQLFunctions.decimalCollation)" : plainCollation(x)
            // Parameters are bound in the order they appear in the text, so the operand is only
            // translated where it is written (a list of nils alone only writes the IS NULL test).
            let nonNull = values.filter { v in
                if case .constant(.null) = v { return false }
                if case .object(nil) = v { return false }
                return true
            }
            let hasNull = nonNull.count < values.count
            var parts: [String] = []
            if !nonNull.isEmpty {
                let l = try sql(x)
                if !isDecimal(x), let list = longList(nonNull) {
                    parts.append("coalesce(\(l)\(collate) IN (SELECT value FROM json_each(\(list.sql))), 0)")
                } else {
                    var items: [String] = []
                    for v in nonNull { items.append(try sql(v)) }
                    parts.append("coalesce(\(l)\(collate) IN (\(items.joined(separator: ", "))), 0)")
                }
            }
            if hasNull { parts.append("(\(try sql(x)) IS NULL)") }
            return "(" + parts.joined(separator: " OR ") + ")"
        case .between(let x, let lower, let upper, let inclusive):
            if QueryEvaluator.domain(x, lower, upper) == .floatingPoint {
                return try sql(.and([.compare(.greaterOrEqual, x, lower), .compare(inclusive ? .lessOrEqual : .less, x, upper)]))
            }
            let decimal = isDecimal(x) || isDecimal(lower) || isDecimal(upper)
            let collate = decimal ? " COLLATE \(SQLFunctions.decimalOrderCollation)" : plainCollation(x, lower, upper)
            // The value names the collation too (see `.compare`).
            let l = try sql(x)
            if inclusive {
                return "(\(l)\(collate) BETWEEN \(try sql(lower))\(collate) AND \(try sql(upper))\(collate))"
            }
            let lo = try sql(lower), l2 = try sql(x), hi = try sql(upper)
            return "(\(l)\(collate) >= \(lo)\(collate) AND \(l2)\(collate) < \(hi)\(collate))"
        case .coalesce(let a, let b):
            return "coalesce(\(try sql(a)), \(try sql(b)))"
        case .conditional(let c, let a, let b):
            return "(CASE WHEN \(try sql(c)) THEN \(try sql(a)) ELSE \(try sql(b)) END)"
        case .anyMatch(let path, let scopeNumber, let predicate):
            return "EXISTS (\(try subquery(path, scope: scopeNumber, select: "1", predicate: predicate, negate: false)))"
        case .allMatch(let path, let scopeNumber, let predicate):
            return "(NOT EXISTS (\(try subquery(path, scope: scopeNumber, select: "1", predicate: predicate, negate: true))))"
        case .count(let path):
            return "(\(try subquery(path, scope: nil, select: "count(*)", predicate: nil, negate: false)))"
        }
    }

    /// The longest list of constants of an `IN` test bound one parameter per value: a longer
    /// one is bound as one array parameter (``longList(_:)``), since a statement takes a limited
    /// number of parameters (SQLite 32766 unless built otherwise, PostgreSQL 65535).
    static let longListLength = 512

    /// The values of a long `IN` list (more than ``longListLength``, nil constants left out) as
    /// one array parameter, bound here, and the SQL type of its elements (PostgreSQL): for
    /// SQLite a JSON array (`json_each(?)`), for PostgreSQL an array literal (`?::BIGINT[]`).
    /// Nil for a shorter list, or one of values an array cannot carry exactly (objects, blobs
    /// in SQLite's JSON, text holding NUL, values of several types).
    func longList(_ values: [QueryExpression]) -> (sql: String, elementType: String)? {
        guard values.count > Self.longListLength else { return nil }
        var integers: [Int64] = [], texts: [String] = [], blobs: [Data] = []
        for v in values {
            guard case .constant(let c) = v else { return nil }
            switch c {
            case .integer(let i): integers.append(i)
            case .text(let t) where !t.utf8.contains(0): texts.append(t)
            case .blob(let d) where dialect == .postgreSQL: blobs.append(d)
            default: return nil
            }
        }
        guard [integers.count, texts.count, blobs.count].filter({ $0 > 0 }).count == 1 else { return nil }
        if !integers.isEmpty { return (bind(.text(dialect.keyList(integers))), "BIGINT") }
        if dialect == .sqlite { return (bind(.text("[" + texts.map(Self.jsonString).joined(separator: ",") + "]")), "TEXT") }
        if !texts.isEmpty { return (bind(.text("{" + texts.map(Self.arrayElement).joined(separator: ",") + "}")), "TEXT") }
        let hex = blobs.map { d in "\"\\\\x" + d.map { String(format: "%02x", $0) }.joined() + "\"" }
        return (bind(.text("{" + hex.joined(separator: ",") + "}")), "BYTEA")
    }

    /// `s` as a JSON string.
    static func jsonString(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    /// `s` as a quoted element of a PostgreSQL array literal.
    static func arrayElement(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The largest number of operands of one `AND` or `OR` written as a flat chain.
    static let flatChainLimit = 64

    /// `parts` joined by `separator` (` AND ` or ` OR `), in order, in parentheses. SQLite parses
    /// a chain `a OR b OR c …` as a tree as deep as the chain is long, and refuses a tree deeper
    /// than 1000 ("Expression tree is too large"): a longer chain (a `contains(where:)` over a
    /// captured array of a thousand values) is grouped in halves, as deep as the logarithm of
    /// its length. Parameters stay in the order of the parts.
    static func grouped(_ parts: ArraySlice<String>, _ separator: String) -> String {
        if parts.count <= flatChainLimit { return "(" + parts.joined(separator: separator) + ")" }
        let middle = parts.startIndex + parts.count / 2
        return "(" + grouped(parts[..<middle], separator) + separator + grouped(parts[middle...], separator) + ")"
    }

    /// A comparison of two translated operands.
    func comparison(_ op: ComparisonOperator, _ l: String, _ r: String, collate: String = "") -> String {
        switch op {
        case .equal: return "(\(l) \(dialect.isSQL) \(r)\(collate))"
        case .notEqual: return "(\(l) \(dialect.isNotSQL) \(r)\(collate))"
        case .less: return "(\(l) < \(r)\(collate))"
        case .lessOrEqual: return "(\(l) <= \(r)\(collate))"
        case .greater: return "(\(l) > \(r)\(collate))"
        case .greaterOrEqual: return "(\(l) >= \(r)\(collate))"
        }
    }

    // MARK: Floating-point values

    /// −0.0 as it is stored (see `StoredValue(double:)`).
    static let negativeZero = "x'8000000000000000'"

    /// A comparison of floating-point values, as Swift compares them: NaN is unordered and
    /// unequal to everything, −0.0 equals 0.0. Both are stored as blobs, which SQL orders after
    /// every number, so a column compared with a constant gets SQL that corrects for them and
    /// still uses an index (``columnComparison(_:_:_:)``); anything else calls
    /// `coherence_compare`, which is ``QueryEvaluator``'s comparison.
    private func floatingPointComparison(
        _ op: ComparisonOperator, _ a: QueryExpression,
        _ b: QueryExpression
    ) throws(CoherenceError) -> String {
        if case .path(let p) = a, let attribute = p.attribute, case .constant(let c) = b {
            if let sql = try columnComparison(op, p, attribute, c) { return sql }
        }
        if case .constant(let c) = a, case .path(let p) = b, let attribute = p.attribute {
            if let sql = try columnComparison(op.mirrored, p, attribute, c) { return sql }
        }
        let l = try sql(a), r = try sql(b)
        return "\(SQLFunctions.compareFunction)('\(op.rawValue)', \(l), \(r))"
    }

    /// `column op constant` for a floating-point column, or nil when the constant is not a
    /// number or NaN. A NaN row fails every test but `!=`; a −0.0 row passes where 0 would.
    private func columnComparison(
        _ op: ComparisonOperator, _ path: PropertyPath, _ attribute: AttributeDescription,
        _ constant: StoredValue
    ) throws(CoherenceError) -> String? {
        let c = QueryEvaluator.comparable(floatingPoint: constant)
        let column = try pathSQL(path)
        if c.isSpecialReal {  // NaN: only `!=` holds, for every row (nil included, as `==` is null-safe)
            switch op {
            case .equal: return "0"
            case .notEqual: return "1"
            default: return "(CASE WHEN \(column) IS NULL THEN NULL ELSE 0 END)"
            }
        }
        switch c {
        case .integer, .real: break
        default: return nil
        }
        // Where 0 stands against the constant: whether a −0.0 row passes.
        let zero = StoredValue.sqliteOrder(.integer(0), c)
        let negativeZero = attribute.type.keepsNegativeZero
        let value = bind(c)
        switch op {
        case .equal:
            return negativeZero && zero == 0 ? "(\(column) IS \(value) OR \(column) IS \(Self.negativeZero))" : "(\(column) IS \(value))"
        case .notEqual:
            return negativeZero && zero == 0
                ? "(\(column) IS NOT \(value) AND \(column) IS NOT \(Self.negativeZero))" : "(\(column) IS NOT \(value))"
        case .less, .lessOrEqual:
            // A NaN blob is not less than a number.
            let passes = op == .less ? zero < 0 : zero <= 0
            return negativeZero && passes
                ? "(\(column) \(op.rawValue) \(value) OR \(column) = \(Self.negativeZero))" : "(\(column) \(op.rawValue) \(value))"
        case .greater, .greaterOrEqual:
            // A blob is greater than every number: `< x''` (the least blob) leaves NaN out.
            let passes = op == .greater ? zero > 0 : zero >= 0
            let test = "(\(column) \(op.rawValue) \(value) AND \(column) < x'')"
            return negativeZero && passes ? "(\(test) OR \(column) = \(Self.negativeZero))" : test
        }
    }

    /// Whether a floating-point value is in a list, each element compared as by `==` (NaN is in
    /// no list, −0.0 is where 0 is). A column and constants get `IN`; anything else a comparison
    /// per element.
    private func floatingPointMembership(_ x: QueryExpression, _ values: [QueryExpression]) throws(CoherenceError) -> String {
        var constants: [StoredValue] = []
        for v in values {
            guard case .constant(let c) = v else { break }
            constants.append(QueryEvaluator.comparable(floatingPoint: c))
        }
        guard case .path(let p) = x, let attribute = p.attribute, constants.count == values.count,
            constants.allSatisfy({ $0.isNull || $0.isSpecialReal || QueryEvaluator.isNumber($0) })
        else {
            return try sql(.or(values.map { .compare(.equal, x, $0) }))
        }
        let column = try pathSQL(p)
        let numbers = constants.filter(QueryEvaluator.isNumber)
        var parts: [String] = []
        if !numbers.isEmpty {
            parts.append("coalesce(\(column) IN (\(numbers.map { bind($0) }.joined(separator: ", "))), 0)")
        }
        if attribute.type.keepsNegativeZero, numbers.contains(where: { StoredValue.sqliteOrder($0, .integer(0)) == 0 }) {
            parts.append("(\(column) IS \(Self.negativeZero))")
        }
        if constants.contains(where: \.isNull) { parts.append("(\(column) IS NULL)") }
        return parts.isEmpty ? "0" : "(" + parts.joined(separator: " OR ") + ")"
    }

    /// A correlated subquery over the destinations of a to-many relationship.
    private func subquery(
        _ path: ToManyPath, scope scopeNumber: Int?, select: String, predicate: QueryExpression?,
        negate: Bool
    ) throws(CoherenceError) -> String {
        let r = path.relationship
        guard let dest = r.destinationEntity else {
            throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no destination", property: r.name)
        }
        let owner = try pathSQL(path.base)  // the source object's key
        let alias = newAlias("s")
        let inner = Scope(alias: alias, entity: dest)
        if let scopeNumber {
            while scopes.count <= scopeNumber { scopes.append(inner) }
            scopes[scopeNumber] = inner
        }
        var from: String
        var conditions: [String] = []
        switch r.storage {
        case .inverseForeignKey:
            guard let inverse = r.inverseRelationship else {
                throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no inverse", property: r.name)
            }
            from = "\(generator.table(dest)) AS \(alias)"
            conditions.append("\(alias).\(generator.column(inverse)) = \(owner)")
        case .joinTable:
            guard let (jt, src, dst) = generator.joinTable(r) else {
                throw CoherenceError(.unsupportedPredicate, "Relationship '\(r.name)' has no join table", property: r.name)
            }
            let j = newAlias("m")
            from = "\(jt) AS \(j) JOIN \(generator.table(dest)) AS \(alias) ON \(alias).Z_PK = \(j).\(dst)"
            conditions.append("\(j).\(src) = \(owner)")
        case .foreignKey:
            throw CoherenceError(.unsupportedPredicate, "'\(r.name)' is a to-one relationship, not a collection", property: r.name)
        }
        if let restriction = generator.entityRestriction(dest, includesSubentities: true, alias: alias) {
            conditions.append(restriction)
        }
        if let predicate {
            let p = try condition(predicate)
            conditions.append(negate ? "NOT coalesce(\(p), \(dialect.falseSQL))" : p)
        }
        from += inner.joins.map { " " + $0 }.joined()
        return "SELECT \(select) FROM \(from) WHERE \(conditions.joined(separator: " AND "))"
    }
}
