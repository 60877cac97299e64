import Foundation

// The `#Predicate` macro accepts `localizedStandardContains(_:)` and `caseInsensitiveCompare(_:)`
// and expands them to `PredicateExpressions.build_localizedStandardContains` /
// `build_caseInsensitiveCompare`, which Foundation only provides on Apple platforms. Coherence
// provides them elsewhere, with the same shape as Apple's so the same predicates compile
// everywhere. Their in-Swift evaluation folds case and diacritics exactly as Coherence's SQL and
// in-memory evaluation do (see `TextFolding`), so a predicate gives the same answer however it
// is evaluated.
//
// `ComparisonResult.orderedSame` written inside `#Predicate` is turned into a key path by the
// macro and does not compile; capture the value outside the predicate instead:
//
// ```swift
// let same = ComparisonResult.orderedSame
// let p = #Predicate<Person> { $0.name.caseInsensitiveCompare("ada") == same }
// ```

#if !canImport(Darwin)
extension PredicateExpressions {
    /// `root.localizedStandardContains(other)`: whether `other` occurs in `root`, ignoring case
    /// and diacritics (Coherence's folding; not locale-dependent).
    public struct StringLocalizedStandardContains<Root: PredicateExpression, Other: PredicateExpression>: PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// The result type: whether `other` occurs in `root`.
        public typealias Output = Bool
        /// The string searched.
        public let root: Root
        /// The string searched for.
        public let other: Other

        /// Creates the expression.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// Evaluates the expression: folded, byte-wise substring search; an empty string is
        /// never found, as by Foundation's `localizedStandardContains`.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            let haystack = TextFolding.fold(String(try root.evaluate(bindings)))
            let needle = TextFolding.fold(String(try other.evaluate(bindings)))
            return !needle.isEmpty && TextSearch.contains(haystack, needle)
        }
    }

    /// `root.caseInsensitiveCompare(other)`: the order of the two strings, ignoring case and
    /// diacritics (Coherence's folding, then UTF-8 byte order).
    public struct StringCaseInsensitiveCompare<Root: PredicateExpression, Other: PredicateExpression>: PredicateExpression
    where Root.Output: StringProtocol, Other.Output: StringProtocol {
        /// The result type: the order of `root` relative to `other`.
        public typealias Output = ComparisonResult
        /// The left string.
        public let root: Root
        /// The right string.
        public let other: Other

        /// Creates the expression.
        public init(root: Root, other: Other) {
            self.root = root
            self.other = other
        }

        /// Evaluates the expression: compares the folded strings by their UTF-8 bytes.
        public func evaluate(_ bindings: PredicateBindings) throws -> ComparisonResult {
            let a = TextFolding.fold(String(try root.evaluate(bindings)))
            let b = TextFolding.fold(String(try other.evaluate(bindings)))
            switch StoredValue.compareUTF8(a, b) {
            case ..<0: return .orderedAscending
            case 0: return .orderedSame
            default: return .orderedDescending
            }
        }
    }

    /// Builds `root.localizedStandardContains(other)` for the `#Predicate` macro.
    public static func build_localizedStandardContains<Root, Other>(_ root: Root, _ other: Other)
        -> StringLocalizedStandardContains<Root, Other>
    {
        StringLocalizedStandardContains(root: root, other: other)
    }

    /// Builds `root.caseInsensitiveCompare(other)` for the `#Predicate` macro.
    public static func build_caseInsensitiveCompare<Root, Other>(_ root: Root, _ other: Other)
        -> StringCaseInsensitiveCompare<Root, Other>
    {
        StringCaseInsensitiveCompare(root: root, other: other)
    }
}

extension PredicateExpressions.StringLocalizedStandardContains: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StringLocalizedStandardContains: Codable where Root: Codable, Other: Codable {}
extension PredicateExpressions.StringLocalizedStandardContains: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}

extension PredicateExpressions.StringCaseInsensitiveCompare: Sendable where Root: Sendable, Other: Sendable {}
extension PredicateExpressions.StringCaseInsensitiveCompare: Codable where Root: Codable, Other: Codable {}
extension PredicateExpressions.StringCaseInsensitiveCompare: StandardPredicateExpression
where Root: StandardPredicateExpression, Other: StandardPredicateExpression {}
#endif
