import Foundation

/// A fetch's ordering prepared for comparing many rows: each row's sort values are read once
/// (``values(of:)``) and compared as values (``compare(_:_:)``), with the same order as
/// ``QueryEvaluator/areInIncreasingOrder(_:_:keys:)`` and the SQL ORDER BY.
///
/// Used where rows are kept in order as they change (a fetched-results controller), so that
/// placing a changed row costs comparisons of values, not evaluations of key paths.
package struct RowOrder: Sendable {
    /// The values one row is sorted by, one per key.
    package struct Values: Sendable {
        fileprivate var values: [QueryEvaluator.Value]
    }

    /// The keys.
    package let keys: [SortKey]
    /// Whether any key reads through a relationship (a related object's change can move a row).
    package let followsRelationships: Bool
    private let domains: [QueryEvaluator.Domain]

    package init(keys: [SortKey]) {
        self.keys = keys
        domains = keys.map { QueryEvaluator.domain(.path($0.path)) }
        followsRelationships = keys.contains { !$0.path.relationships.isEmpty }
    }

    /// The row's sort values (folded where the key is).
    package func values(of row: any QueryRow) -> Values {
        var values: [QueryEvaluator.Value] = []
        values.reserveCapacity(keys.count)
        for key in keys {
            var scopes = QueryEvaluator.Scopes(root: row)
            let v = QueryEvaluator.evaluate(.path(key.path), &scopes)
            values.append(key.folded ? QueryEvaluator.fold(v) : v)
        }
        return Values(values: values)
    }

    /// Negative when `a` sorts before `b`, positive when after, zero when the keys tie.
    package func compare(_ a: Values, _ b: Values) -> Int {
        for i in keys.indices {
            let c = QueryEvaluator.order(a.values[i], b.values[i], in: domains[i])
            if c != 0 { return keys[i].ascending ? c : -c }
        }
        return 0
    }
}
