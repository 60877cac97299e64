import Foundation

/// Case- and diacritic-insensitive folding, shared by SQL and in-memory evaluation.
package enum TextFolding {
    /// Folds case and diacritics.
    package static func fold(_ s: String) -> String {
        fold(s, options: .caseAndDiacritics)
    }

    /// Folds what `options` names: case (lowercased, as `folding(options: .caseInsensitive)`),
    /// diacritics, or both. Not locale-dependent.
    package static func fold(_ s: String, options: TextFoldOptions) -> String {
        if options.isEmpty { return s }
        // Fast path: ASCII has no diacritics and only needs lowercasing.
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return options.contains(.caseInsensitive) ? s.lowercased() : s }
        var foundation: String.CompareOptions = []
        if options.contains(.caseInsensitive) { foundation.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { foundation.insert(.diacriticInsensitive) }
        return s.folding(options: foundation, locale: nil)
    }
}

/// What ``TextFolding`` folds.
package struct TextFoldOptions: OptionSet, Hashable, Sendable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }
    /// Case.
    package static let caseInsensitive = TextFoldOptions(rawValue: 1)
    /// Diacritics.
    package static let diacriticInsensitive = TextFoldOptions(rawValue: 2)
    /// Both.
    package static let caseAndDiacritics: TextFoldOptions = [.caseInsensitive, .diacriticInsensitive]
}
