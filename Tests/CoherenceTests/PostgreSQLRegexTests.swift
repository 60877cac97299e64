import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherenceStore

/// `.matches` on PostgreSQL: the ICU patterns PostgreSQL reads the same way are translated and
/// answer as on SQLite; the others are refused with `.unsupportedPredicate`, never answered
/// differently.
@Suite("PostgreSQL regular expressions")
struct PostgreSQLRegexTests {
    static let names = [
        "Ada Lovelace", "a\nb", "a\rb", "a\u{2028}b", "ab", "Émile", "émile", "straße", "JÜRGEN", "jurgen", "Kelvin",
        "\u{212A}elvin", "\u{17F}un", "SUN", "x.y", "x+y", "xzy", "abc123", "ABC", "a-b", ""
    ]

    static let translated = [
        "a.b", "Ada.*", "(?i)ada.*", "[a-z]+[0-9]*", "(?i)[a-z]+", "(?i)kelvin", "(?i)sun", "x\\.y", "x\\+y", "(a|b)c.*",
        "[^a-z]+", "a.{0,3}", "É.*", "(?i)x.y", "[a-]+b", "a[-]b", "(?:ab|cd)+", "[^,]*", "stra.e"
    ]

    static let refused = [
        "Ada\\b.*", "\\w+", "\\p{Lu}.*", "(?i)émile", "a.*?", "^a.*", "a.*$", "(?=a).*", "[[:alpha:]]+", "\\d+", "(a)\\1",
        "[a-z&&[^b]]+", "(?s).*"
    ]

    @Test func theTranslationKeepsICUsMeaning() {
        #expect(PostgreSQLRegex.translate("a.b") == "^(?:a[^\\n\\r\\u0085\\u2028\\u2029]b)$")
        #expect(PostgreSQLRegex.translate("(?i)k+") == "^(?:[kK\u{212A}]+)$")
        #expect(PostgreSQLRegex.translate("(?i)[a-c]") == "^(?:[a-cA-C])$")
        #expect(PostgreSQLRegex.translate("x\\.y{2,3}") == "^(?:x\\.y{2,3})$")
        for pattern in Self.refused { #expect(PostgreSQLRegex.translate(pattern) == nil, "\(pattern)") }
        for pattern in Self.translated { #expect(PostgreSQLRegex.translate(pattern) != nil, "\(pattern)") }
    }

    /// The names a pattern matches on a store of `type` (sorted), or the error.
    static func matching(_ pattern: String, _ c: PersistentStoreCoordinator) throws -> [String] {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let options: StringComparisonOptions = pattern.hasPrefix("(?i)") ? [.caseInsensitive] : []
        let body = options.isEmpty ? pattern : String(pattern.dropFirst(4))
        return try context.performAndWait {
            try context.fetch(FetchRequest<Person>(predicate: .matches(\Person.name, body, options: options))).map(\.name).sorted()
        }
    }

    @Test(.postgreSQLServer) func translatedPatternsAnswerAsOnSQLiteAndOthersAreRefused() throws {
        let dir = try TemporaryDirectory()
        let sqlite = try makeCoordinator(.sqlite, in: dir)
        let postgres = try makeCoordinator(.postgreSQL, in: dir)
        for c in [sqlite, postgres] {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            try context.performAndWait {
                for name in Self.names { Person(context: context).name = name }
                try context.save()
            }
        }
        for pattern in Self.translated {
            let expected = try Self.matching(pattern, sqlite)
            #expect(try Self.matching(pattern, postgres) == expected, "\(pattern)")
        }
        for pattern in Self.refused where (try? Self.matching(pattern, sqlite)) != nil {
            let error = #expect(throws: CoherenceError.self, "\(pattern)") { try Self.matching(pattern, postgres) }
            #expect(error?.code == .unsupportedPredicate, "\(pattern)")
        }
    }
}
