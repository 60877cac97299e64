import Foundation
// TEMPORARY: replaced by the predicate-compiler branch's QueryEvaluator.
package enum QueryEvaluator {
    package static func matches(_ e: QueryExpression, row: any QueryRow) -> Bool { true }
    package static func areInIncreasingOrder(_ a: any QueryRow, _ b: any QueryRow, keys: [SortKey]) -> Bool { false }
}
package enum PredicateCompiler {
    package static func compile<T: ManagedObject>(_ predicate: Predicate<T>, entity: EntityDescription) throws(CoherenceError) -> QueryExpression {
        throw CoherenceError(.unsupportedPredicate, "stub")
    }
    package static func sortKeys<T: ManagedObject>(_ descriptors: [SortDescriptor<T>], entity: EntityDescription) throws(CoherenceError) -> [SortKey] {
        if descriptors.isEmpty { return [] }
        throw CoherenceError(.unsupportedPredicate, "stub")
    }
}
