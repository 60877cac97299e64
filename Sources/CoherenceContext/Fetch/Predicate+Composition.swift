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
///
/// Operands that are themselves `&&` compositions are taken apart and all the operands nested
/// again as a balanced tree (in order), so a chain built in a loop (`filters.reduce(base, &&)`)
/// stays as shallow as `joined(with: .and)`.
public func && <T: ManagedObject>(lhs: Predicate<T>, rhs: Predicate<T>) -> Predicate<T> {
    PredicateComposition.balanced(PredicateComposition.operands(of: lhs, .and) + PredicateComposition.operands(of: rhs, .and), .and)
}

/// Either predicate: `#Predicate { lhs.evaluate($0) || rhs.evaluate($0) }`. Operands that are
/// `||` compositions are nested again as a balanced tree, as for `&&`.
public func || <T: ManagedObject>(lhs: Predicate<T>, rhs: Predicate<T>) -> Predicate<T> {
    PredicateComposition.balanced(PredicateComposition.operands(of: lhs, .or) + PredicateComposition.operands(of: rhs, .or), .or)
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
        var predicates: [Predicate<T>] = []
        for p in self { predicates += PredicateComposition.operands(of: p, join) }
        guard !predicates.isEmpty else {
            let empty = join == .and
            return Predicate<T> { _ in PredicateExpressions.Value(empty) }
        }
        return PredicateComposition.balanced(predicates, join)
    }
}

/// How `&&`, `||` and `joined(with:)` build their trees.
enum PredicateComposition {
    /// `predicate.evaluate($0)`, an operand of a composition.
    typealias Operand<T: ManagedObject> = PredicateExpressions.PredicateEvaluate<
        PredicateExpressions.Value<Predicate<T>>, PredicateExpressions.Variable<T>
    >

    /// The operands of `predicate` when it is a `join` composition of nested predicates
    /// (`a.evaluate($0) && b.evaluate($0)`, nested as deeply as it is), in order; else
    /// `predicate` itself. Read without recursion, whatever the tree's depth.
    static func operands<T: ManagedObject>(of predicate: Predicate<T>, _ join: PredicateJoin) -> [Predicate<T>] {
        var result: [Predicate<T>] = []
        var pending = [predicate]  // a stack: the next operand in order is on top
        while let p = pending.popLast() {
            let sides: (Operand<T>, Operand<T>)?
            switch join {
            case .and: sides = (p.expression as? PredicateExpressions.Conjunction<Operand<T>, Operand<T>>).map { ($0.lhs, $0.rhs) }
            case .or: sides = (p.expression as? PredicateExpressions.Disjunction<Operand<T>, Operand<T>>).map { ($0.lhs, $0.rhs) }
            }
            // Only operands that evaluate on the composed predicate's own object.
            if let (l, r) = sides, l.input.key == p.variable.key, r.input.key == p.variable.key {
                pending.append(r.predicate.value)
                pending.append(l.predicate.value)
            } else {
                result.append(p)
            }
        }
        return result
    }

    /// `predicates` (not empty) combined with `join` as a balanced tree, in order.
    static func balanced<T: ManagedObject>(_ predicates: [Predicate<T>], _ join: PredicateJoin) -> Predicate<T> {
        balanced(predicates[...], join)
    }

    private static func balanced<T: ManagedObject>(_ predicates: ArraySlice<Predicate<T>>, _ join: PredicateJoin) -> Predicate<T> {
        if predicates.count == 1, let only = predicates.first { return only }
        let middle = predicates.startIndex + predicates.count / 2
        let lhs = balanced(predicates[..<middle], join), rhs = balanced(predicates[middle...], join)
        switch join {
        case .and:
            return Predicate<T> { object in
                PredicateExpressions.Conjunction(
                    lhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(lhs), object),
                    rhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(rhs), object))
            }
        case .or:
            return Predicate<T> { object in
                PredicateExpressions.Disjunction(
                    lhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(lhs), object),
                    rhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(rhs), object))
            }
        }
    }
}
