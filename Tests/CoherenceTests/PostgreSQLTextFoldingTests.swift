import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The PostgreSQL store's `coherence_fold` gives exactly what ``TextFolding`` gives (SQLite and
/// in-memory stores call `TextFolding` itself), for every option, on every scalar that folds
/// or is a mark, alone and followed by marks, and on random text mixing scripts, marks, emoji
/// and characters that fold to several.
@Suite struct PostgreSQLTextFoldingTests {
    /// Texts whose folding is easy to get wrong.
    static func corpus() -> [String] {
        var texts: [String] = []
        let tables = PostgreSQLTextFolding.Tables()
        var special = Set(tables.extend).union(tables.caseMap.keys)
        for option in [2, 3] { special.formUnion((tables.baseMap[option] ?? [:]).keys) }
        special.formUnion(0x80..<0x600)
        let suffixes = ["", "\u{301}", "\u{20D0}\u{301}\u{316}x", "\u{5B1}\u{5B0}\u{591}", "\u{344}\u{344}"]
        for value in special.sorted() {
            guard let scalar = Unicode.Scalar(value) else { continue }
            for suffix in suffixes { texts.append(String(scalar) + suffix) }
        }
        let pool: [Unicode.Scalar] =
            Array(
                "aZ 9éÉèüÜßẞﬁﬓևŉİǰΐᾈΩÅÅΣςЖж一가が🎉🏽\u{FE0F}\u{200D}ȺȾ\u{300}\u{301}\u{308}\u{316}\u{344}\u{345}\u{5B0}\u{591}\u{20D0}\u{F73}\u{1DCD}אﾊﾟＡ𝔘𐐀"
                    .unicodeScalars)
        var generator = SeededGenerator(seed: 23)
        for _ in 0..<8_000 {
            var text = ""
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                text.unicodeScalars.append(pool[Int.random(in: 0..<pool.count, using: &generator)])
            }
            texts.append(text)
        }
        return texts
    }

    @Test(.postgreSQLServer, .timeLimit(.minutes(5))) func sqlFoldingIsTextFolding() throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL("fold")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .postgreSQL, at: url)  // makes the schema and its functions
        let connection = try PostgreSQLConnection(PostgreSQLConfiguration(url: url))
        let texts = Self.corpus()
        var differences: [String] = []
        for option in 1...3 {
            for chunk in stride(from: 0, to: texts.count, by: 20_000) {
                let part = Array(texts[chunk..<min(chunk + 20_000, texts.count)])
                let result = try connection.execute(
                    "SELECT coherence_fold(s, $2::INTEGER) FROM unnest(string_to_array($1, E'\\n')) WITH ORDINALITY AS u(s, n) ORDER BY n",
                    [.text(part.joined(separator: "\n")), .integer(Int64(option))])
                #expect(result.rows.count == part.count)
                for (text, row) in zip(part, result.rows) {
                    let expected = TextFolding.fold(text, options: TextFoldOptions(rawValue: option))
                    guard case .text(let folded) = row.first ?? .null, folded.unicodeScalars.elementsEqual(expected.unicodeScalars) else {
                        if differences.count < 20 {
                            let scalars = text.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " ")
                            differences.append(
                                "option \(option): \(scalars) → \(String(describing: row.first)), expected \(expected.debugDescription)")
                        }
                        continue
                    }
                }
            }
        }
        #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))")
    }

    /// A store made by an earlier version keeps that version's functions in its schema until
    /// it is opened again: opening it replaces them, so its predicates fold as today's do.
    @Test(.postgreSQLServer) func openingAStoreReplacesOutdatedFunctions() throws {
        let dir = try TemporaryDirectory()
        let url = try dir.postgreSQLURL("outdated")
        try PersistentStoreCoordinator(managedObjectModel: try makeTestModel()).addPersistentStore(type: .postgreSQL, at: url)
        let connection = try PostgreSQLConnection(PostgreSQLConfiguration(url: url))
        let fold = { () throws -> StoredValue? in
            try connection.execute("SELECT coherence_fold($1, 3)", [.text("Straße É")]).rows.first?.first
        }
        // What an earlier version left: a function that folds nothing, and no hash in the metadata.
        try connection.execute(
            "CREATE OR REPLACE FUNCTION coherence_fold(t TEXT, options INTEGER) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$ SELECT t $$")
        try connection.execute("DELETE FROM Z_METADATA WHERE Z_KEY = 'functionsHash'")
        #expect(try fold() == .text("Straße É"))

        try PersistentStoreCoordinator(managedObjectModel: try makeTestModel()).addPersistentStore(type: .postgreSQL, at: url)
        #expect(try fold() == .text(TextFolding.fold("Straße É", options: TextFoldOptions(rawValue: 3))))
        let hash = try connection.execute("SELECT Z_VALUE FROM Z_METADATA WHERE Z_KEY = 'functionsHash'").rows.first?.first
        #expect(hash != nil && hash != .null)
    }
}

/// A small deterministic generator (SplitMix64), so that a failure can be reproduced.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
