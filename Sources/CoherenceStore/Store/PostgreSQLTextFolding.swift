import Foundation

/// ``TextFolding`` as SQL functions of a PostgreSQL store's schema, so that a folded comparison
/// gives the answer it gives in SQLite and in memory.
///
/// `TextFolding` folds as Foundation's `folding(options:locale:)` does, one character cluster
/// (a character and the grapheme-extending marks after it) at a time:
///
/// - Case folding maps each scalar on its own, sometimes to several (`ß` to `ss`, `ﬁ` to `fi`).
/// - Diacritic folding replaces a canonically decomposable character whose decomposition starts
///   with a Latin, Greek or Cyrillic letter (below U+0510) by that letter, and drops the marks
///   after such a character; after other characters (CJK, Hangul, emoji, Hebrew…) it keeps the
///   marks, decomposed and sorted by combining class, except a first mark below U+0510 after a
///   character it left as it was. A mark at the start of the text is a character of its own.
///
/// The SQL does the same with `regexp_replace` (dropping marks), `translate` (scalars mapped to
/// one scalar, looked up in an order that puts frequent characters first) and `replace` (scalars
/// mapped to several); text with kept marks goes on to `coherence_fold_sort`, which sorts them. The tables are worked out from `TextFolding` itself when the first PostgreSQL store is
/// created, probing each scalar that can fold (as Foundation's Unicode tables say), so the SQL
/// follows the Foundation it runs with. ASCII text takes a short path (`lower` in the `C`
/// collation, which changes ASCII letters only).
package enum PostgreSQLTextFolding {
    /// The statements that create `coherence_fold(text)`, `coherence_fold(text, options)` and
    /// `coherence_fold_sort(text)`, their helper for text with kept marks.
    package static let functions: [String] = Tables().functions

    /// What folding does to each scalar, found by asking ``TextFolding``.
    struct Tables {
        /// Scalars that belong to the cluster of the character before them (grapheme-extending).
        var extend: Set<UInt32> = []
        /// Case folding, per scalar (options 1).
        var caseMap: [UInt32: String] = [:]
        /// Per option (2: diacritics, 3: both): a character folded on its own, when it changes.
        var baseMap: [Int: [UInt32: String]] = [2: [:], 3: [:]]
        /// Per option: characters below U+0510 that keep the marks after them.
        var lowKeepers: [Int: Set<UInt32>] = [2: [], 3: []]
        /// Per option: characters from U+0510 on that drop the marks after them.
        var highDroppers: [Int: Set<UInt32>] = [2: [], 3: []]
        /// Kept marks that decompose, and their decomposition.
        var markDecomposition: [UInt32: String] = [:]
        /// Canonical combining classes other than 0.
        var combiningClass: [UInt32: UInt8] = [:]

        init() {
            var candidates: [Unicode.Scalar] = []
            var extendCandidates: [Unicode.Scalar] = []
            // Every scalar that can fold or extend a cluster; left out: CJK ideographs, Hangul
            // syllables, private use and the unassigned planes (none folds or extends).
            let ranges: [Range<UInt32>] = [
                0x80..<0x3400, 0x4DC0..<0x4E00, 0xA000..<0xAC00, 0xD7A4..<0xE000, 0xF900..<0x20000, 0xE0000..<0xE1000
            ]
            for value in ranges.joined() {
                guard let scalar = Unicode.Scalar(value) else { continue }
                let p = scalar.properties
                if p.canonicalCombiningClass.rawValue != 0 { combiningClass[value] = p.canonicalCombiningClass.rawValue }
                var mark = p.isGraphemeExtend || p.isEmojiModifier
                switch p.generalCategory {
                case .nonspacingMark, .enclosingMark, .spacingMark, .format: mark = true
                default: break
                }
                if mark { extendCandidates.append(scalar) }
                // Decomposable letters folded to Latin, Greek or Cyrillic ones are all below U+3000.
                if mark || p.changesWhenCaseFolded || p.changesWhenLowercased || p.changesWhenCaseMapped || value < 0x3000 {
                    candidates.append(scalar)
                }
            }
            for m in extendCandidates where Self.same(TextFolding.fold("a" + String(m), options: .diacriticInsensitive), "a") {
                extend.insert(m.value)
            }
            let probe = "\u{20D0}"  // a mark above U+0510 that does not decompose
            for scalar in candidates {
                let text = String(scalar), v = scalar.value
                let folded = TextFolding.fold(text, options: .caseInsensitive)
                if !Self.same(folded, text) { caseMap[v] = folded }
                for option in [2, 3] {
                    let options = TextFoldOptions(rawValue: option)
                    let alone = TextFolding.fold(text, options: options)
                    if !Self.same(alone, text) { baseMap[option, default: [:]][v] = alone }
                    let drops = Self.same(TextFolding.fold(text + probe, options: options), alone)
                    if drops && v >= 0x510 { highDroppers[option, default: []].insert(v) }
                    if !drops && v < 0x510 { lowKeepers[option, default: []].insert(v) }
                }
            }
            for m in extend {
                guard let scalar = Unicode.Scalar(m) else { continue }
                var scalars = Array(
                    TextFolding.fold("\u{4E00}\u{20D0}" + String(scalar), options: .diacriticInsensitive).unicodeScalars.dropFirst())
                if let i = scalars.firstIndex(of: "\u{20D0}") { scalars.remove(at: i) }
                let decomposed = String(String.UnicodeScalarView(scalars))
                if !Self.same(decomposed, String(scalar)) { markDecomposition[m] = decomposed }
            }
        }

        /// Whether two strings hold the same scalars (`==` on strings compares canonical equivalence).
        static func same(_ a: String, _ b: String) -> Bool { a.unicodeScalars.elementsEqual(b.unicodeScalars) }

        // MARK: SQL

        /// Characters that drop the marks after them (under `option`), as scalar values.
        func droppers(_ option: Int) -> [UInt32] {
            let keepers = lowKeepers[option] ?? []
            return (UInt32(1)..<0x510).filter { !keepers.contains($0) } + (highDroppers[option] ?? []).sorted()
        }

        var functions: [String] {
            let options = "RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE"
            // Not STRICT (a strict function whose body is a CASE is never inlined); NULL gives NULL.
            let fold =
                "CASE WHEN options = 0 THEN t WHEN octet_length(t) = length(t) THEN "
                + "(CASE WHEN options = 2 THEN t ELSE lower(t COLLATE \"C\") END) "
                + "WHEN options = 1 THEN \(map("t", caseMap, lowered: true, gate: "t")) "
                + "WHEN options = 2 THEN \(foldSQL(2)) ELSE \(foldSQL(3)) END"
            return [
                "CREATE OR REPLACE FUNCTION coherence_fold_sort(x TEXT) \(options) STRICT AS $$ SELECT \(sortSQL) $$",
                "CREATE OR REPLACE FUNCTION coherence_fold(t TEXT, options INTEGER) \(options) AS $$ SELECT \(fold) $$",
                "CREATE OR REPLACE FUNCTION coherence_fold(t TEXT) \(options) AS $$ SELECT coherence_fold(t, 3) $$"
            ]
        }

        /// Folding of `t` with diacritics (option 2, or 3 with case). Marks after characters that
        /// drop them go; the characters are mapped. Text that keeps marks also loses a first mark
        /// below U+0510 after a character left as it was, has its kept marks decomposed, and
        /// goes through `coherence_fold_sort`.
        func foldSQL(_ option: Int) -> String {
            let table = baseMap[option] ?? [:]
            let droppers = droppers(option)
            let baseDroppers = droppers.filter { !extend.contains($0) }
            let marks = Self.bracket(extend)
            let dropped = "regexp_replace(t, '(^[\(Self.bracket(droppers))]|[\(Self.bracket(baseDroppers))])[\(marks)]+', '\\1', 'g')"
            let keptMark = "(^[^\(Self.bracket(droppers))]|[^\(Self.bracket(baseDroppers + extend))])[\(marks)]"
            func lone(_ x: String) -> String { map(x, table, lowered: option == 3, gate: "t") }
            func rest(_ x: String) -> String { map(x, table, lowered: option == 3, gate: "t", excluding: extend) }
            // Kept marks: a first one below U+0510 after a character left as it was goes.
            let unchanged = droppers + Array(table.keys)
            let lowMarks = extend.filter { $0 < 0x510 }
            let trimmed =
                "regexp_replace(\(dropped), '(^[^\(Self.bracket(unchanged))]|[^\(Self.bracket(unchanged + extend))])[\(Self.bracket(lowMarks))]', '\\1', 'g')"
            var decomposed = rest("substr(\(trimmed), 2)"), whole = rest(trimmed)
            for (m, d) in markDecomposition.sorted(by: { $0.key < $1.key }) {
                decomposed = "replace(\(decomposed), \(Self.quote(Self.text([m]))), \(Self.quote(d)))"
                whole = "replace(\(whole), \(Self.quote(Self.text([m]))), \(Self.quote(d)))"
            }
            let kept = "coherence_fold_sort(CASE WHEN t ~ '^[\(marks)]' THEN \(lone("left(t, 1)")) || \(decomposed) ELSE \(whole) END)"
            let leadingMarks = table.keys.filter { extend.contains($0) }
            let leading =
                leadingMarks.isEmpty
                ? "" : "WHEN t ~ '^[\(Self.bracket(leadingMarks))]' THEN \(lone("left(t, 1)")) || \(rest("substr(\(dropped), 2)")) "
            return "CASE WHEN t ~ '\(keptMark)' THEN \(kept) " + leading + "ELSE \(rest(dropped)) END"
        }

        /// `coherence_fold_sort(x)`: each character cluster of `x` (a character and the marks
        /// after it) with its marks sorted by combining class, after any characters of class 0 at
        /// its start, as Foundation sorts them. (Classes are read from a string of the characters
        /// that have one and a parallel string of U+0100 + class.)
        var sortSQL: String {
            var characters: [UInt32] = [], classes: [UInt32] = []
            for (scalar, c) in combiningClass.sorted(by: { $0.key < $1.key }) {
                characters.append(scalar)
                classes.append(0x100 + UInt32(c))
            }
            let k =
                "coalesce(ascii(substr(\(Self.quote(Self.text(classes))), nullif(strpos(\(Self.quote(Self.text(characters))), ch), 0), 1)) - 256, 0)"
            return "string_agg(ch, '' ORDER BY cluster, sorts, CASE WHEN sorts THEN k END, i) FROM "
                + "(SELECT ch, i, k, cluster, bool_or(k <> 0) OVER (PARTITION BY cluster ORDER BY i) AS sorts FROM "
                + "(SELECT ch, i, k, sum(CASE WHEN i = 1 OR ch !~ '^[\(Self.bracket(extend))]$' THEN 1 ELSE 0 END) OVER (ORDER BY i) AS cluster FROM "
                + "(SELECT ch, i, \(k) AS k FROM regexp_split_to_table(x, '') WITH ORDINALITY AS s(ch, i)) a) b) c"
        }

        /// `x` with each scalar of `table` mapped (ASCII letters lowered first when `lowered`):
        /// one-scalar results by `translate`, longer ones by `replace`. `gate` is an inexpensive
        /// expression holding every scalar `x` can hold (so that `x` is computed once).
        func map(_ x: String, _ table: [UInt32: String], lowered: Bool, gate: String, excluding: Set<UInt32> = []) -> String {
            let input = lowered ? "lower(\(x) COLLATE \"C\")" : x
            var single: [UInt32: UInt32] = [:]
            var multiple: [(UInt32, String)] = []
            for (k, v) in table.sorted(by: { $0.key < $1.key }) where !excluding.contains(k) && !(lowered && (0x41...0x5A).contains(k)) {
                let scalars = Array(v.unicodeScalars)
                if scalars.count == 1 { single[k] = scalars[0].value } else { multiple.append((k, v)) }
            }
            if single.isEmpty && multiple.isEmpty { return input }
            let multipleKeys = Set(multiple.map(\.0))
            // `translate` scans its list for each character: frequent characters first.
            var frequent: [UInt32] = "eaisnrtoludcmpgbvhfqyjxkwz 0123456789.-_@',".unicodeScalars.map(\.value)
            if !lowered { frequent += Array(0x41...0x5A) }
            frequent +=
                Array(0xE0...0xFF) + Array(0xC0...0xDF) + Array(0x100...0x17F) + Array(0x430...0x45F) + Array(0x410...0x42F)
                + Array(0x400...0x40F) + Array(0x3B1...0x3CE) + Array(0x391...0x3AB)
            var from: [UInt32] = [], to: [UInt32] = []
            var placed = Set<UInt32>()
            for k in frequent + single.keys.sorted() where !multipleKeys.contains(k) && !excluding.contains(k) && placed.insert(k).inserted
            {
                from.append(k)
                to.append(single[k] ?? k)
            }
            var e = "translate(\(input), \(Self.quote(Self.text(from))), \(Self.quote(Self.text(to))))"
            if !multiple.isEmpty {
                var replaced = e
                for (k, v) in multiple { replaced = "replace(\(replaced), \(Self.quote(Self.text([k]))), \(Self.quote(v)))" }
                e = "(CASE WHEN \(gate) ~ '[\(Self.bracket(multipleKeys))]' THEN \(replaced) ELSE \(e) END)"
            }
            return "(CASE WHEN \(gate) ~ '[\(Self.bracket(Set(single.keys).union(multipleKeys)))]' THEN \(e) ELSE \(input) END)"
        }

        /// Scalars as text.
        static func text(_ values: [UInt32]) -> String {
            var s = ""
            for v in values { if let scalar = Unicode.Scalar(v) { s.unicodeScalars.append(scalar) } }
            return s
        }

        /// A string constant.
        static func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }

        /// Scalars as the inside of a regular-expression bracket (ranges of `\uXXXX` and
        /// `\UXXXXXXXX` escapes).
        static func bracket<S: Sequence>(_ values: S) -> String where S.Element == UInt32 {
            let sorted = Set(values).sorted()
            func escape(_ v: UInt32) -> String {
                let hex = String(v, radix: 16, uppercase: true)
                return v <= 0xFFFF
                    ? "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    : "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
            }
            var out = "", i = 0
            while i < sorted.count {
                var j = i
                while j + 1 < sorted.count && sorted[j + 1] == sorted[j] + 1 { j += 1 }
                out += escape(sorted[i]) + (j > i ? (j > i + 1 ? "-" : "") + escape(sorted[j]) : "")
                i = j + 1
            }
            return out
        }
    }
}
