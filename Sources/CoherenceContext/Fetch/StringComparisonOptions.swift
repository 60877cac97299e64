/// How the key-path string tests compare text (Core Data's `NSComparisonPredicate.Options`).
///
/// Without options, text compares exactly, by Unicode code points. `.caseInsensitive` and
/// `.diacriticInsensitive` fold both sides first (see the predicate guide's *Text* section):
///
/// ```swift
/// let request = FetchRequest<Person>().where(.equal(\.name, to: "helene", options: .caseAndDiacriticInsensitive))
/// ```
public struct StringComparisonOptions: OptionSet, Hashable, Sendable, Codable {
    /// The options' bits.
    public let rawValue: Int
    /// Creates options from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Upper and lower case compare equal (`[c]`).
    public static let caseInsensitive = StringComparisonOptions(rawValue: 1)
    /// Letters with and without diacritics compare equal (`[d]`).
    public static let diacriticInsensitive = StringComparisonOptions(rawValue: 2)
    /// Both (`[cd]`).
    public static let caseAndDiacriticInsensitive: StringComparisonOptions = [.caseInsensitive, .diacriticInsensitive]

    /// The folding these options call for.
    var folding: TextFoldOptions {
        var result: TextFoldOptions = []
        if contains(.caseInsensitive) { result.insert(.caseInsensitive) }
        if contains(.diacriticInsensitive) { result.insert(.diacriticInsensitive) }
        return result
    }
}
