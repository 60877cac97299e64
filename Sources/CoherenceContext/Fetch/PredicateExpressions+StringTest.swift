import Foundation

extension PredicateExpressions {
    /// A string test of the key-path predicate builders (``StringTestOperator``), with
    /// ``StringComparisonOptions``: `Predicate.contains(\.name, "é", options: .caseInsensitive)`
    /// and its siblings build it. Its operand is a `String` or a `String?`; a nil string passes
    /// no test (in SQL the test is *unknown*, see the predicate guide).
    ///
    /// Evaluated in Swift (`predicate.evaluate(_:)`) it gives the answers a fetch gives.
    public struct StringTest<Root: PredicateExpression>: PredicateExpression {
        /// The result type: whether the string passes the test.
        public typealias Output = Bool
        /// The string tested (a `String` or a `String?`).
        public let root: Root
        /// The test.
        public let test: StringTestOperator
        /// The string, wildcard pattern or regular expression tested against.
        public let pattern: String
        /// How text is compared.
        public let options: StringComparisonOptions

        /// Creates the expression.
        public init(root: Root, test: StringTestOperator, pattern: String, options: StringComparisonOptions) {
            self.root = root
            self.test = test
            self.pattern = pattern
            self.options = options
        }

        /// Evaluates the test as a fetch does.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            guard let text = (try root.evaluate(bindings) as Any) as? String else { return false }
            switch test {
            case .matches:
                let regex = StringTest.regex(pattern, options)
                return TextPattern.matches(TextFolding.fold(text, options: regex.textFolding), regex.pattern) ?? false
            case .equal, .contains, .beginsWith, .endsWith, .like:
                let t = TextFolding.fold(text, options: options.folding), p = TextFolding.fold(pattern, options: options.folding)
                switch test {
                case .equal: return t.utf8.elementsEqual(p.utf8)
                case .contains: return TextSearch.contains(t, p)
                case .beginsWith: return TextSearch.hasPrefix(t, p)
                case .endsWith: return TextSearch.hasSuffix(t, p)
                default: return TextPattern.like(t, p)
                }
            }
        }

        /// The regular expression a `matches` test runs, and the folding of the text it runs on:
        /// case-insensitive matching is the `(?i)` flag (folding the pattern would change its
        /// escapes, as `\D` to `\d`); diacritics are folded from both the text and the pattern
        /// (diacritic folding leaves ASCII, and so every regular-expression syntax, alone).
        static func regex(_ pattern: String, _ options: StringComparisonOptions) -> (pattern: String, textFolding: TextFoldOptions) {
            let diacritics = options.contains(.diacriticInsensitive)
            var result = diacritics ? TextFolding.fold(pattern, options: .diacriticInsensitive) : pattern
            if options.contains(.caseInsensitive) { result = TextPattern.ignoringCase(result) }
            return (result, diacritics ? .diacriticInsensitive : [])
        }
    }
}

/// The tests of `PredicateExpressions.StringTest`.
public enum StringTestOperator: String, Sendable, Codable {
    /// The whole string equals the pattern.
    case equal
    /// The string contains the pattern.
    case contains
    /// The string begins with the pattern.
    case beginsWith
    /// The string ends with the pattern.
    case endsWith
    /// The whole string matches the wildcard pattern: `?` is any one character, `*` any run of
    /// characters (also none); every other character matches itself.
    case like
    /// The whole string matches the regular expression (ICU syntax, as `NSRegularExpression`).
    case matches
}

extension PredicateExpressions.StringTest: Sendable where Root: Sendable {}
extension PredicateExpressions.StringTest: Codable where Root: Codable {}
extension PredicateExpressions.StringTest: StandardPredicateExpression where Root: StandardPredicateExpression {}

extension PredicateExpressions.StringTest: QueryCompilable {
    /// A folded comparison or string test; `matches` with a pattern that is not a valid regular
    /// expression throws, naming it.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        let value = try context.value(root)
        if test == .matches {
            if let error = TextPattern.regexError(pattern) {
                throw context.unsupported(Self.self, "'\(pattern)' is not a valid regular expression (\(error.localizedDescription))")
            }
            let regex = Self.regex(pattern, options)
            let text: QueryExpression = regex.textFolding.isEmpty ? value : .fold(value, options: regex.textFolding)
            return .value(.string(.matches, text, .constant(.text(regex.pattern))))
        }
        let folding = options.folding
        let text: QueryExpression = folding.isEmpty ? value : .fold(value, options: folding)
        let constant = QueryExpression.constant(.text(TextFolding.fold(pattern, options: folding)))
        switch test {
        case .equal: return .value(.compare(.equal, text, constant))
        case .contains: return .value(.string(.contains, text, constant))
        case .beginsWith: return .value(.string(.beginsWith, text, constant))
        case .endsWith: return .value(.string(.endsWith, text, constant))
        case .like, .matches: return .value(.string(.like, text, constant))
        }
    }
}
