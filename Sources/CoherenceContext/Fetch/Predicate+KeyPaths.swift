import Foundation

// Key-path predicate builders (RCDataKit's key-path operators over `NSPredicate`), typed end to
// end: each builds the `Predicate` a `#Predicate` closure would, so it runs in SQL and composes
// with `&&`, `||` and `!`. The key paths must be literals (`\.age`, `\Person.age`): a literal is
// `Sendable`, as a predicate's key paths must be.

/// `\T.x == value`, null-safe (`\Person.email == nil` matches objects without an email).
public func == <T: ManagedObject, V: Equatable & Codable & Sendable>(lhs: KeyPath<T, V> & Sendable, rhs: V) -> Predicate<T> {
    Predicate<T> {
        PredicateExpressions.Equal(lhs: PredicateExpressions.ModelKeyPath(root: $0, keyPath: lhs), rhs: PredicateExpressions.Value(rhs))
    }
}

/// `\T.x != value`, null-safe (`\Person.email != "a"` matches objects without an email).
public func != <T: ManagedObject, V: Equatable & Codable & Sendable>(lhs: KeyPath<T, V> & Sendable, rhs: V) -> Predicate<T> {
    Predicate<T> {
        PredicateExpressions.NotEqual(lhs: PredicateExpressions.ModelKeyPath(root: $0, keyPath: lhs), rhs: PredicateExpressions.Value(rhs))
    }
}

/// `\T.x < value`.
public func < <T: ManagedObject, V: Comparable & Codable & Sendable>(lhs: KeyPath<T, V> & Sendable, rhs: V) -> Predicate<T> {
    keyPathComparison(lhs, .lessThan, rhs)
}

/// `\T.x <= value`.
public func <= <T: ManagedObject, V: Comparable & Codable & Sendable>(lhs: KeyPath<T, V> & Sendable, rhs: V) -> Predicate<T> {
    keyPathComparison(lhs, .lessThanOrEqual, rhs)
}

/// `\T.x > value`.
public func > <T: ManagedObject, V: Comparable & Codable & Sendable>(lhs: KeyPath<T, V> & Sendable, rhs: V) -> Predicate<T> {
    keyPathComparison(lhs, .greaterThan, rhs)
}

/// `\T.x >= value`.
public func >= <T: ManagedObject, V: Comparable & Codable & Sendable>(lhs: KeyPath<T, V> & Sendable, rhs: V) -> Predicate<T> {
    keyPathComparison(lhs, .greaterThanOrEqual, rhs)
}

/// `\T.x < value` for an optional property: *unknown* (no match, nor for its negation) when it
/// is nil. (Evaluated in Swift, a nil property makes `evaluate` throw, as `x! < value` does.)
public func < <T: ManagedObject, V: Comparable & Codable & Sendable>(lhs: KeyPath<T, V?> & Sendable, rhs: V) -> Predicate<T> {
    keyPathComparison(lhs, .lessThan, rhs)
}

/// `\T.x <= value` for an optional property (nil: unknown).
public func <= <T: ManagedObject, V: Comparable & Codable & Sendable>(lhs: KeyPath<T, V?> & Sendable, rhs: V) -> Predicate<T> {
    keyPathComparison(lhs, .lessThanOrEqual, rhs)
}

/// `\T.x > value` for an optional property (nil: unknown).
public func > <T: ManagedObject, V: Comparable & Codable & Sendable>(lhs: KeyPath<T, V?> & Sendable, rhs: V) -> Predicate<T> {
    keyPathComparison(lhs, .greaterThan, rhs)
}

/// `\T.x >= value` for an optional property (nil: unknown).
public func >= <T: ManagedObject, V: Comparable & Codable & Sendable>(lhs: KeyPath<T, V?> & Sendable, rhs: V) -> Predicate<T> {
    keyPathComparison(lhs, .greaterThanOrEqual, rhs)
}

/// `\T.relationship == object`: the to-one relationship's destination is `object` (compared by
/// object ID), or there is none when `object` is nil.
///
/// ```swift
/// let pupils = FetchRequest<Student>().where(\.school == school)
/// ```
public func == <T: ManagedObject, R: ManagedObject>(lhs: KeyPath<T, R?> & Sendable, rhs: R?) -> Predicate<T> {
    Predicate<T> {
        PredicateExpressions.ObjectIdentity(root: PredicateExpressions.ModelKeyPath(root: $0, keyPath: lhs), objectIDs: [rhs?.objectID])
    }
}

/// `\T.relationship != object`: the to-one relationship's destination is not `object` (or there
/// is one, when `object` is nil).
public func != <T: ManagedObject, R: ManagedObject>(lhs: KeyPath<T, R?> & Sendable, rhs: R?) -> Predicate<T> {
    !(lhs == rhs)
}

private func keyPathComparison<T: ManagedObject, V: Comparable & Codable & Sendable>(
    _ keyPath: KeyPath<T, V> & Sendable, _ op: PredicateExpressions.ComparisonOperator, _ value: V
) -> Predicate<T> {
    Predicate<T> {
        PredicateExpressions.Comparison(
            lhs: PredicateExpressions.ModelKeyPath(root: $0, keyPath: keyPath), rhs: PredicateExpressions.Value(value), op: op)
    }
}

private func keyPathComparison<T: ManagedObject, V: Comparable & Codable & Sendable>(
    _ keyPath: KeyPath<T, V?> & Sendable, _ op: PredicateExpressions.ComparisonOperator, _ value: V
) -> Predicate<T> {
    Predicate<T> {
        PredicateExpressions.Comparison(
            lhs: PredicateExpressions.ForcedUnwrap(PredicateExpressions.ModelKeyPath(root: $0, keyPath: keyPath)),
            rhs: PredicateExpressions.Value(value), op: op)
    }
}

/// A `String` or `String?` property, for the string tests of `Predicate`.
public protocol StringPropertyValue: Codable, Sendable {}
extension String: StringPropertyValue {}
extension Optional: StringPropertyValue where Wrapped == String {}

extension Predicate {
    /// `lower <= x && x <= upper`.
    ///
    /// ```swift
    /// FetchRequest<Person>().where(.between(\.age, 30...40))
    /// ```
    public static func between<T: ManagedObject, V: Comparable & Codable & Sendable>(
        _ keyPath: KeyPath<T, V> & Sendable, _ range: ClosedRange<V>
    )
        -> Predicate<T>
    {
        Predicate<T> {
            PredicateExpressions.RangeExpressionContains(
                range: PredicateExpressions.ClosedRange(
                    lower: PredicateExpressions.Value(range.lowerBound), upper: PredicateExpressions.Value(range.upperBound)),
                element: PredicateExpressions.ModelKeyPath(root: $0, keyPath: keyPath))
        }
    }

    /// `lower <= x && x <= upper` for an optional property (nil: unknown).
    public static func between<T: ManagedObject, V: Comparable & Codable & Sendable>(
        _ keyPath: KeyPath<T, V?> & Sendable, _ range: ClosedRange<V>
    )
        -> Predicate<T>
    {
        Predicate<T> {
            PredicateExpressions.RangeExpressionContains(
                range: PredicateExpressions.ClosedRange(
                    lower: PredicateExpressions.Value(range.lowerBound), upper: PredicateExpressions.Value(range.upperBound)),
                element: PredicateExpressions.ForcedUnwrap(PredicateExpressions.ModelKeyPath(root: $0, keyPath: keyPath)))
        }
    }

    /// The property's value is one of `values` (SQL `IN`; null-safe, so `nil` in the values
    /// matches objects whose property is nil).
    ///
    /// ```swift
    /// FetchRequest<Person>().where(.in(\.name, ["Ada", "Bob"]))
    /// ```
    public static func `in`<T: ManagedObject, V: Equatable & Codable & Sendable>(
        _ keyPath: KeyPath<T, V> & Sendable, _ values: some Sequence<V>
    )
        -> Predicate<T>
    {
        let list = Array(values)
        return Predicate<T> {
            PredicateExpressions.SequenceContains(
                sequence: PredicateExpressions.Value(list), element: PredicateExpressions.ModelKeyPath(root: $0, keyPath: keyPath))
        }
    }

    /// The optional property's value is one of `values` (never nil).
    public static func `in`<T: ManagedObject, V: Equatable & Codable & Sendable>(
        _ keyPath: KeyPath<T, V?> & Sendable, _ values: some Sequence<V>
    )
        -> Predicate<T>
    {
        .in(keyPath, values.map { Optional($0) })
    }

    /// The string equals `value` (case- and diacritic-insensitively as `options` say).
    ///
    /// ```swift
    /// FetchRequest<Person>().where(.equal(\.name, to: "helene", options: .caseAndDiacriticInsensitive))  // "Hélène"
    /// ```
    public static func equal<T: ManagedObject, S: StringPropertyValue>(
        _ keyPath: KeyPath<T, S> & Sendable, to value: String, options: StringComparisonOptions = []
    ) -> Predicate<T> {
        stringTest(keyPath, .equal, value, options)
    }

    /// The string does not equal `value`: the negation of `equal(_:to:options:)`, so a nil
    /// string matches.
    public static func notEqual<T: ManagedObject, S: StringPropertyValue>(
        _ keyPath: KeyPath<T, S> & Sendable, to value: String, options: StringComparisonOptions = []
    ) -> Predicate<T> {
        !stringTest(keyPath, .equal, value, options)
    }

    /// The string contains `value`.
    public static func contains<T: ManagedObject, S: StringPropertyValue>(
        _ keyPath: KeyPath<T, S> & Sendable, _ value: String, options: StringComparisonOptions = []
    ) -> Predicate<T> {
        stringTest(keyPath, .contains, value, options)
    }

    /// The string begins with `value`.
    public static func beginsWith<T: ManagedObject, S: StringPropertyValue>(
        _ keyPath: KeyPath<T, S> & Sendable, _ value: String, options: StringComparisonOptions = []
    ) -> Predicate<T> {
        stringTest(keyPath, .beginsWith, value, options)
    }

    /// The string ends with `value`.
    public static func endsWith<T: ManagedObject, S: StringPropertyValue>(
        _ keyPath: KeyPath<T, S> & Sendable, _ value: String, options: StringComparisonOptions = []
    ) -> Predicate<T> {
        stringTest(keyPath, .endsWith, value, options)
    }

    /// The whole string matches the wildcard `pattern`: `?` is any one character, `*` any run
    /// of characters (also none).
    ///
    /// ```swift
    /// FetchRequest<Person>().where(.like(\.name, "J?rg*", options: .diacriticInsensitive))  // "Jürgen"
    /// ```
    public static func like<T: ManagedObject, S: StringPropertyValue>(
        _ keyPath: KeyPath<T, S> & Sendable, _ pattern: String, options: StringComparisonOptions = []
    ) -> Predicate<T> {
        stringTest(keyPath, .like, pattern, options)
    }

    /// The whole string matches the regular expression `pattern` (ICU syntax, as
    /// `NSRegularExpression`). A pattern that is not a valid regular expression makes the fetch
    /// throw `.unsupportedPredicate` naming it.
    ///
    /// ```swift
    /// FetchRequest<Person>().where(.matches(\.name, "[A-Z][a-z]+"))
    /// ```
    public static func matches<T: ManagedObject, S: StringPropertyValue>(
        _ keyPath: KeyPath<T, S> & Sendable, _ pattern: String, options: StringComparisonOptions = []
    ) -> Predicate<T> {
        stringTest(keyPath, .matches, pattern, options)
    }

    /// The to-many relationship holds `object` (compared by object ID).
    ///
    /// ```swift
    /// FetchRequest<School>().where(.contains(\.students, student))
    /// ```
    public static func contains<T: ManagedObject, C: Sequence, R: ManagedObject>(
        _ keyPath: KeyPath<T, C> & Sendable, _ object: R
    ) -> Predicate<T> where C.Element == R {
        let id = object.objectID
        return Predicate<T> {
            PredicateExpressions.ToManyContainsObject(root: PredicateExpressions.ModelKeyPath(root: $0, keyPath: keyPath), objectID: id)
        }
    }

    private static func stringTest<T: ManagedObject, S: StringPropertyValue>(
        _ keyPath: KeyPath<T, S> & Sendable, _ test: StringTestOperator, _ pattern: String, _ options: StringComparisonOptions
    ) -> Predicate<T> {
        Predicate<T> {
            PredicateExpressions.StringTest(
                root: PredicateExpressions.ModelKeyPath(root: $0, keyPath: keyPath), test: test, pattern: pattern, options: options)
        }
    }
}
