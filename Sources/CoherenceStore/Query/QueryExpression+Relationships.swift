import Foundation

extension QueryExpression {
    /// Whether the expression reads another object than the row it tests: through a to-one
    /// path, a to-many test or a count. Such a predicate's answer for a row can change when
    /// only a related object changes.
    package var followsRelationships: Bool {
        switch self {
        case .constant, .object: return false
        case .path(let p): return !p.relationships.isEmpty || p.scope != 0
        case .compare(_, let a, let b), .arithmetic(_, let a, let b), .string(_, let a, let b), .coalesce(let a, let b):
            return a.followsRelationships || b.followsRelationships
        case .and(let xs), .or(let xs): return xs.contains { $0.followsRelationships }
        case .not(let x), .isNull(let x), .negate(let x), .fold(let x, _): return x.followsRelationships
        case .inList(let x, let xs): return x.followsRelationships || xs.contains { $0.followsRelationships }
        case .between(let x, let lower, let upper, _):
            return x.followsRelationships || lower.followsRelationships || upper.followsRelationships
        case .conditional(let c, let a, let b): return c.followsRelationships || a.followsRelationships || b.followsRelationships
        case .anyMatch, .allMatch, .count: return true
        }
    }
}
