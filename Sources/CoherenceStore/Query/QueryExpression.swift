import Foundation

/// The intermediate form of a fetch predicate.
///
/// A `#Predicate` is compiled once into a `QueryExpression` by ``PredicateCompiler``; the SQL
/// generator turns it into SQL and ``QueryEvaluator`` evaluates it in memory (for the in-memory
/// store and for unsaved objects). Both follow the same semantics, so both give identical answers:
///
/// - Three-valued logic as in SQL: a comparison with a nil operand is *unknown*; `&&`, `||`, `!`
///   follow Kleene logic; a row matches only when the predicate is *true*.
/// - `==` and `!=` are null-safe (`nil == nil` is true), as in Swift.
/// - Text compares by Unicode code points (UTF-8 bytes); `.fold` makes a comparison case- and
///   diacritic-insensitive.
/// - Decimal values compare numerically, `Decimal.nan` equal to itself and before every number
///   (as Swift orders `Decimal`).
/// - Floating-point values compare as in Swift (NaN unordered and unequal to everything, −0.0
///   equal to 0.0), though NaN and −0.0 are stored as blobs; they sort with −0.0 as 0 and NaN
///   after every number.
package indirect enum QueryExpression: Sendable, CustomStringConvertible {
    /// A literal value in stored form.
    case constant(StoredValue)
    /// A literal object reference (nil: no object; a temporary ID matches no stored row).
    case object(ObjectID?)
    /// A property value, or an object reference when `path.attribute` is nil.
    case path(PropertyPath)
    /// A comparison.
    case compare(ComparisonOperator, QueryExpression, QueryExpression)
    /// All of the operands are true (empty: true).
    case and([QueryExpression])
    /// Any of the operands is true (empty: false).
    case or([QueryExpression])
    /// Negation.
    case not(QueryExpression)
    /// Whether the operand is nil.
    case isNull(QueryExpression)
    /// Arithmetic on numbers.
    case arithmetic(ArithmeticOperator, QueryExpression, QueryExpression)
    /// Unary minus.
    case negate(QueryExpression)
    /// Folded text (see `TextFolding`): case and diacritics unless `options` says otherwise.
    case fold(QueryExpression, options: TextFoldOptions = .caseAndDiacritics)
    /// A string test: whether the first operand contains / begins with / ends with the second,
    /// or matches it as a wildcard pattern or a regular expression (see `TextPattern`).
    case string(StringOperator, QueryExpression, QueryExpression)
    /// Whether the operand equals one of the values (null-safe).
    case inList(QueryExpression, [QueryExpression])
    /// `lower <= operand && operand <= upper` (or `< upper` when `upperInclusive` is false).
    case between(QueryExpression, lower: QueryExpression, upper: QueryExpression, upperInclusive: Bool)
    /// The first operand, or the second when the first is nil.
    case coalesce(QueryExpression, QueryExpression)
    /// `condition ? a : b`.
    case conditional(QueryExpression, QueryExpression, QueryExpression)
    /// Whether any object of a to-many relationship satisfies `predicate`, which refers to that
    /// object as scope `scope`.
    case anyMatch(ToManyPath, scope: Int, predicate: QueryExpression)
    /// Whether every object of a to-many relationship satisfies `predicate` (true when empty).
    case allMatch(ToManyPath, scope: Int, predicate: QueryExpression)
    /// The number of objects in a to-many relationship.
    case count(ToManyPath)

    package var description: String {
        switch self {
        case .constant(let v): return v.description
        case .object(let id): return id.map { "\($0)" } ?? "nil"
        case .path(let p): return p.description
        case .compare(let op, let a, let b): return "(\(a) \(op.rawValue) \(b))"
        case .and(let xs): return xs.isEmpty ? "TRUE" : "(" + xs.map(\.description).joined(separator: " AND ") + ")"
        case .or(let xs): return xs.isEmpty ? "FALSE" : "(" + xs.map(\.description).joined(separator: " OR ") + ")"
        case .not(let x): return "NOT \(x)"
        case .isNull(let x): return "(\(x) IS NULL)"
        case .arithmetic(let op, let a, let b): return "(\(a) \(op.rawValue) \(b))"
        case .negate(let x): return "-\(x)"
        case .fold(let x, let options): return options == .caseAndDiacritics ? "fold(\(x))" : "fold\(options.rawValue)(\(x))"
        case .string(let op, let a, let b): return "\(op.rawValue)(\(a), \(b))"
        case .inList(let x, let xs): return "(\(x) IN [\(xs.map(\.description).joined(separator: ", "))])"
        case .between(let x, let lo, let hi, let inc): return "(\(x) BETWEEN \(lo) AND \(hi)\(inc ? "" : " exclusive"))"
        case .coalesce(let a, let b): return "coalesce(\(a), \(b))"
        case .conditional(let c, let a, let b): return "(\(c) ? \(a) : \(b))"
        case .anyMatch(let p, let s, let x): return "ANY(\(p) as $\(s): \(x))"
        case .allMatch(let p, let s, let x): return "ALL(\(p) as $\(s): \(x))"
        case .count(let p): return "count(\(p))"
        }
    }
}

/// A comparison operator.
package enum ComparisonOperator: String, Sendable {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="

    /// The operator with its operands swapped: `a < b` is `b > a`.
    package var mirrored: ComparisonOperator {
        switch self {
        case .equal, .notEqual: return self
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        }
    }
}

/// An arithmetic operator. `divide` on two integers is integer division (as Swift's `/` on
/// `Int`); `realDivide` always divides as floating point.
package enum ArithmeticOperator: String, Sendable {
    case add = "+", subtract = "-", multiply = "*", divide = "/", realDivide = "/.", remainder = "%"
}

/// A string test. `like` matches a wildcard pattern (`?` one character, `*` any run), `matches`
/// a regular expression, both over the whole string (see `TextPattern`).
package enum StringOperator: String, Sendable {
    case contains, beginsWith, endsWith, like, matches
}

/// A property reached from a scope through zero or more to-one relationships.
///
/// Scope 0 is the fetched object; scopes 1, 2, … are the objects bound by nested
/// `contains(where:)` / `allSatisfy` over to-many relationships.
package struct PropertyPath: Sendable, CustomStringConvertible {
    /// The scope the path starts from.
    package var scope: Int
    /// To-one relationships followed, in order.
    package var relationships: [RelationshipDescription]
    /// The attribute read at the end, or nil for the object itself.
    package var attribute: AttributeDescription?

    package init(scope: Int, relationships: [RelationshipDescription] = [], attribute: AttributeDescription? = nil) {
        self.scope = scope
        self.relationships = relationships
        self.attribute = attribute
    }

    package var description: String {
        (["$\(scope)"] + relationships.map(\.name) + (attribute.map { [$0.name] } ?? [])).joined(separator: ".")
    }
}

/// A to-many relationship reached from a scope through zero or more to-one relationships.
package struct ToManyPath: Sendable, CustomStringConvertible {
    /// The to-one prefix.
    package var base: PropertyPath
    /// The to-many relationship at the end.
    package var relationship: RelationshipDescription

    package init(base: PropertyPath, relationship: RelationshipDescription) {
        self.base = base
        self.relationship = relationship
    }

    package var description: String { "\(base).\(relationship.name)" }
}

/// One key of a fetch's ordering.
package struct SortKey: Sendable, CustomStringConvertible {
    /// The attribute sorted on, possibly through to-one relationships (scope 0).
    package var path: PropertyPath
    /// Ascending (forward) or descending.
    package var ascending: Bool
    /// Whether text is compared folded (case- and diacritic-insensitive).
    package var folded: Bool

    package init(path: PropertyPath, ascending: Bool, folded: Bool = false) {
        self.path = path
        self.ascending = ascending
        self.folded = folded
    }

    package var description: String { "\(path)\(folded ? " folded" : "") \(ascending ? "ASC" : "DESC")" }
}

/// What the in-memory evaluator needs from a row or an object.
package protocol QueryRow {
    /// The concrete entity of the row.
    var queryEntity: EntityDescription { get }
    /// The identity of the row (for object comparisons).
    var queryObjectID: ObjectID { get }
    /// The stored value at a property slot (attributes; to-one foreign keys).
    func queryValue(at slot: Int) -> StoredValue
    /// The destination of a to-one relationship, or nil.
    func queryToOne(_ relationship: RelationshipDescription) -> (any QueryRow)?
    /// The destinations of a to-many relationship.
    func queryToMany(_ relationship: RelationshipDescription) -> [any QueryRow]
}
