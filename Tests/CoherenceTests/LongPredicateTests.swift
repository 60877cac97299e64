import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Predicates with many parts: thousands of predicates composed with `joined(with:)`,
/// `contains(where:)` and `allSatisfy` over captured arrays of thousands of values, and chains
/// nested too deeply to translate.
@Suite("Long predicates")
struct LongPredicateTests {
    /// The keys of the oracle items a predicate matches: in Swift, by a fetch and by a count,
    /// which must agree.
    static func expectAnswer(_ context: ManagedObjectContext, _ predicate: Predicate<OracleItem>, _ label: String) throws {
        let all = try context.fetch(FetchRequest<OracleItem>())
        let want = try all.filter { try predicate.evaluate($0) }.map(\.key).sorted()
        #expect(!want.isEmpty && want.count < all.count, "\(label): the oracle should split the items")
        #expect(try context.fetch(FetchRequest(predicate: predicate)).map(\.key).sorted() == want, "\(label)")
        #expect(try context.count(for: FetchRequest(predicate: predicate)) == want.count, "\(label)")
    }

    /// `joined(with:)` nested its operands one level per predicate, and translating the tree
    /// recursed once per level: a few hundred predicates stopped the process (a stack overflow)
    /// in every store. The operands are now nested as a balanced tree, and the chain of
    /// `AND` / `OR` it compiles to is written for SQLite in groups (SQLite refuses an
    /// expression tree deeper than 1000).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func thousandsOfJoinedPredicatesTranslate(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { context in
            let notOdd = (0..<3_000).filter { $0 % 2 == 1 }.map { i in #Predicate<OracleItem> { $0.n != i } }
            try Self.expectAnswer(context, notOdd.joined(with: .and), "joined and")
            let multiplesOfThree = stride(from: 0, to: 3_000, by: 3).map { i in #Predicate<OracleItem> { $0.n == i } }
            try Self.expectAnswer(context, multiplesOfThree.joined(with: .or), "joined or")
            try Self.expectAnswer(context, !multiplesOfThree.joined(with: .or), "!joined or")
            // A pending change is matched in memory by the same tree.
            let first = try #require(try context.fetch(FetchRequest<OracleItem>(predicate: #Predicate { $0.n == 0 })).first)
            first.n = 1
            try Self.expectAnswer(context, notOdd.joined(with: .and), "joined and, pending")
        }
    }

    /// `contains(where:)` and `allSatisfy` over a captured array became an `OR` / `AND` of one
    /// test per element, which SQLite refused beyond about a thousand elements
    /// (`.storeReadFailed`, "Expression tree is too large") while the in-memory store and
    /// PostgreSQL answered; so did `contains` of a floating-point value that is not a column
    /// (`manyDoubles.contains($0.optD ?? 0)`), and batch requests with such predicates.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func longDisjunctionsOfCapturedValuesTranslate(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { context in
            let names = (0..<2_000).map { "name \($0)" } + ["abc", "🎉"]
            let numbers = Array(5..<3_005)
            let doubles = (0..<2_000).map { Double($0) / 4 } + [.nan, 1e300]
            try Self.expectAnswer(context, #Predicate { item in names.contains(where: { $0 == item.s }) }, "contains(where:)")
            try Self.expectAnswer(context, #Predicate { item in names.allSatisfy { $0 != item.s } }, "allSatisfy")
            try Self.expectAnswer(context, #Predicate { item in numbers.contains(where: { $0 == item.n }) }, "contains(where:) ints")
            try Self.expectAnswer(context, #Predicate { doubles.contains($0.optD ?? -1) }, "contains(optD ?? -1)")

            let all = try context.fetch(FetchRequest<OracleItem>())
            let keys = Dictionary(uniqueKeysWithValues: all.map { ($0.objectID, $0.key) })
            let matching = #Predicate<OracleItem> { item in numbers.contains(where: { $0 == item.n }) }
            let want = try all.filter { try matching.evaluate($0) }.map(\.key).sorted()
            var update = BatchUpdateRequest<OracleItem>(predicate: matching, propertiesToUpdate: ["mark": 7])
            update.resultType = .objectIDs
            #expect(try (context.execute(update).objectIDs ?? []).map { keys[$0] ?? "?" }.sorted() == want)
            var delete = BatchDeleteRequest(fetchRequest: FetchRequest<OracleItem>(predicate: matching))
            delete.resultType = .objectIDs
            #expect(try (context.execute(delete).objectIDs ?? []).map { keys[$0] ?? "?" }.sorted() == want)
            #expect(try context.persistentStoreCoordinator.count(for: FetchRequest<OracleItem>()) == all.count - want.count)
        }
    }

    /// A captured list was bound one parameter per value, so a list longer than a statement
    /// takes (PostgreSQL: 65535 parameters; SQLite: 32766 unless built otherwise, 250000 here)
    /// failed with `.storeReadFailed` while the in-memory store answered. Long lists of
    /// integers, strings and (PostgreSQL) UUIDs are now bound as one array parameter, value for
    /// value: text with quotes, backslashes, control characters, decomposed accents and emoji
    /// matches exactly as `==` does.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func hugeListsOfCapturedValuesTranslate(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { context in
            let ints = Array(5..<66_000) + [Int.max, Int.min, -7]
            let tricky = ["\"", "\\", "a\"b\\c", "\u{1}x\u{1F}", "{a,b}", "NULL", "[1]", "\u{2028}", "🎉x"]
            // Strings with no canonically equivalent other in the data (Swift's `==` would call
            // those equal, the stores compare bytes: see Predicates.md, "Text").
            let kept: [String] = [0, 2, 4, 10, 12, 14, 16, 18, 20].map { OracleData.strings[$0] }
            let fillers: [String] = (0..<66_000).map { (i: Int) -> String in "s\(i)\"\\" }
            let strings: [String] = fillers + tricky + kept
            let optionalStrings: [String?] = strings + [nil]
            var uuids: [UUID?] = [OracleData.uuid(2)]
            for i in 0..<66_000 {
                let a = UInt8(i % 256), b = UInt8(i / 256 % 256)
                uuids.append(UUID(uuid: (9, 9, a, b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
            }
            try Self.expectAnswer(context, #Predicate { ints.contains($0.int) }, "ints")
            try Self.expectAnswer(context, #Predicate { optionalStrings.contains($0.t) }, "strings and nil")
            try Self.expectAnswer(context, #Predicate { uuids.contains($0.uuid) }, "uuids")

            let all = try context.fetch(FetchRequest<OracleItem>())
            let keys = Dictionary(uniqueKeysWithValues: all.map { ($0.objectID, $0.key) })
            let matching = #Predicate<OracleItem> { strings.contains($0.s) }
            let want = try all.filter { try matching.evaluate($0) }.map(\.key).sorted()
            var delete = BatchDeleteRequest(fetchRequest: FetchRequest<OracleItem>(predicate: matching))
            delete.resultType = .objectIDs
            #expect(try (context.execute(delete).objectIDs ?? []).map { keys[$0] ?? "?" }.sorted() == want)
            #expect(try context.persistentStoreCoordinator.count(for: FetchRequest<OracleItem>()) == all.count - want.count)
        }
    }

    /// A chain of `&&` or `||` built in a loop nested one level per step, and translating it
    /// stopped the process after a few hundred steps (a stack overflow). `&&` and `||` now
    /// nest their operands again as a balanced tree, so such a chain translates; a predicate
    /// still nested too deeply (a chain of `!` built in a loop) is refused with
    /// `.unsupportedPredicate`, in every store, before any store is read.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func chainsBuiltInLoopsTranslateOrAreRefused(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { context in
            var chain = #Predicate<OracleItem> { $0.n >= 0 }
            for i in 0..<700 { chain = chain && #Predicate<OracleItem> { $0.n != i + 10 } }
            try Self.expectAnswer(context, chain, "&& chain")
            var alternatives = #Predicate<OracleItem> { $0.n == 3 }
            for i in 0..<700 { alternatives = #Predicate<OracleItem> { $0.n == i * 5 + 7 } || alternatives }
            try Self.expectAnswer(context, alternatives, "|| chain")
            try Self.expectAnswer(context, !chain || alternatives, "mixed")
            var negations = #Predicate<OracleItem> { $0.n > 3 }
            for _ in 0..<1_000 { negations = !negations }
            let error = #expect(throws: CoherenceError.self) { try context.fetch(FetchRequest(predicate: negations)) }
            #expect(error?.code == .unsupportedPredicate && error?.message.contains("levels deep") == true, "\(String(describing: error))")
            #expect(throws: CoherenceError.self) { try context.count(for: FetchRequest(predicate: negations)) }
        }
    }
}
