import Foundation

// Composition of `Predicate` values (RCDataKit's `&&`, `||`, `!` and `joined(with:)` over
// `NSPredicate`). Each builds the tree `#Predicate { a.evaluate($0) && b.evaluate($0) }` builds,
// which the translator understands: the result runs in SQL as one `WHERE` clause.

/// Both predicates: `#Predicate { lhs.evaluate($0) && rhs.evaluate($0) }`.
///
/// ```swift
/// let adults = #Predicate<Person> { $0.age >= 18 }
/// let request = FetchRequest<Person>().where(adults && .contains(\.name, "a", options: .caseInsensitive))
/// ```
public func && <T: ManagedObject>(lhs: Predicate<T>, rhs: Predicate<T>) -> Predicate<T> {
    Predicate<T> { object in
        PredicateExpressions.Conjunction(
            lhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(lhs), object),
            rhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(rhs), object))
    }
}

/// Either predicate: `#Predicate { lhs.evaluate($0) || rhs.evaluate($0) }`.
public func || <T: ManagedObject>(lhs: Predicate<T>, rhs: Predicate<T>) -> Predicate<T> {
    Predicate<T> { object in
        PredicateExpressions.Disjunction(
            lhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(lhs), object),
            rhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(rhs), object))
    }
}

/// The negation: `#Predicate { !predicate.evaluate($0) }`. As for any `!`, an object for which
/// the predicate is *unknown* (a comparison with nil) matches neither it nor its negation.
public prefix func ! <T: ManagedObject>(predicate: Predicate<T>) -> Predicate<T> {
    Predicate<T> { object in
        PredicateExpressions.Negation(PredicateExpressions.build_evaluate(PredicateExpressions.Value(predicate), object))
    }
}

/// How `joined(with:)` combines predicates.
public enum PredicateJoin: Sendable {
    /// Every predicate (an empty collection: true).
    case and
    /// Any predicate (an empty collection: false).
    case or
}

extension Collection {
    /// The predicates combined with `&&` or `||`, in order.
    ///
    /// They are nested as a balanced tree (`(a && b) && (c && d)`), as deep as the logarithm of
    /// their number, so that thousands of predicates translate (and evaluate) without
    /// recursing once per predicate.
    ///
    /// ```swift
    /// let filters: [Predicate<Person>] = [\.age >= 18, .beginsWith(\.name, "A")]
    /// let request = FetchRequest<Person>().where(filters.joined(with: .and))
    /// ```
    public func joined<T: ManagedObject>(with join: PredicateJoin) -> Predicate<T> where Element == Predicate<T> {
        let predicates = Array(self)
        guard !predicates.isEmpty else {
            let empty = join == .and
            return Predicate<T> { _ in PredicateExpressions.Value(empty) }
        }
        return Self.balanced(predicates[...], join)
    }

    /// `predicates` (not empty) combined as a balanced tree.
    private static func balanced<T: ManagedObject>(_ predicates: ArraySlice<Predicate<T>>, _ join: PredicateJoin) -> Predicate<T> {
        if predicates.count == 1, let only = predicates.first { return only }
        let middle = predicates.startIndex + predicates.count / 2
        let lhs = balanced(predicates[..<middle], join), rhs = balanced(predicates[middle...], join)
        return join == .and ? lhs && rhs : lhs || rhs
    }
}
