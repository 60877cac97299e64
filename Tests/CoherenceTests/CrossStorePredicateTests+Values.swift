import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Values that are easy to get wrong, in both stores: floating-point values SQLite cannot keep as
// a REAL (NaN, −0.0) next to infinities and subnormals, and strings with NUL characters,
// combining marks and astral-plane characters. The expected answers are plain Swift: `==`, `<`
// … on `Double` and `Float` as Swift compares them; text by its UTF-8 bytes (see Predicates.md).

/// Text and floating-point values (the cross-store model adds this entity and ``Reading``).
final class Note: ManagedObject {
    @Attribute var key: String = ""
    @Attribute var text: String = ""
    @Attribute var optionalText: String?
}

/// The test model plus the entities of unusual values.
func makeCrossModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(types: [Person.self, Town.self, Club.self, Sample.self, Circle.self, Square.self, Reading.self, Note.self])
}

struct ReadingSpec: Sendable {
    let label: String
    let value: Double
    let optionalValue: Double?
    let single: Float
    let at: Date?
}

struct NoteSpec: Sendable {
    let key: String
    let text: String
    let optionalText: String?
}

extension CrossData {
    static let negativeNaN = -Double.nan
    static let payloadNaN = Double(nan: 0x1234, signaling: false)

    static let readings: [ReadingSpec] = {
        let values: [Double] = [
            1.5, -1, 0, -0.0, .nan, negativeNaN, payloadNaN, .infinity, -.infinity, .leastNonzeroMagnitude, -.leastNonzeroMagnitude,
            Double(sign: .plus, exponent: -1030, significand: 1),
            .greatestFiniteMagnitude, 2.5, .signalingNaN, 0, -0.0, 100
        ]
        let optionals: [Double?] = [
            nil, .nan, -0.0, 0, 1.5, -1, .infinity, nil, negativeNaN, 2.5, -.infinity, .leastNonzeroMagnitude, nil,
            payloadNaN, 7, -0.0, 0, Double(sign: .plus, exponent: -1030, significand: 1)
        ]
        let singles: [Float] = [
            1.5, -1, 0, -0.0, .nan, -.nan, Float(nan: 0x12, signaling: false), .infinity, -.infinity,
            .leastNonzeroMagnitude, 2.5, 0.1, .signalingNaN, 3, -0.0, 0, Float(sign: .plus, exponent: -133, significand: 1), 100
        ]
        let dates: [Double?] = [1, nil, .nan, 0, -5, 3, nil, .nan, 2, 1e9, -0.0, 7, .infinity, 4, nil, 6, 1, 8]
        return values.indices.map { i in
            ReadingSpec(
                label: "r\(i)", value: values[i], optionalValue: optionals[i], single: singles[i],
                at: dates[i].map { Date(timeIntervalSinceReferenceDate: $0) })
        }
    }()

    static let notes: [NoteSpec] = {
        let texts = [
            "", "\0", "a", "a\0", "a\0b", "\0a", "ab", "\u{E9}", "e\u{301}", "E\u{301}", "\u{C9}", "e", "𝔘", "𝔘\0𝔘",
            "\u{301}", "🎉", "🎉\0", "👨‍👩‍👧", "🇫🇷", "x\u{301}\u{302}", "\u{C5}", "\u{212B}", "ß", "SS", "ﬁ", "a\0B",
            "A\0b", "\0\0", "Ünal\0ü"
        ]
        return texts.indices.map { i in
            NoteSpec(key: "n\(i)", text: texts[i], optionalText: i % 4 == 3 ? nil : texts[(i * 7 + 3) % texts.count])
        }
    }()

    /// The rows of ``readings`` and ``notes``; `postgreSQLValues`: as a PostgreSQL store holds
    /// them — every NaN the plain one (PostgreSQL keeps no sign or payload), and no note with a
    /// NUL character (PostgreSQL text cannot hold one).
    static func valueRows(_ model: ManagedObjectModel, postgreSQLValues: Bool = false) throws -> [RowInsert] {
        let reading = try #require(model.entity(for: Reading.self))
        let note = try #require(model.entity(for: Note.self))
        func plain(_ d: Double?) -> Double? { d.map { $0.isNaN ? .nan : $0 } }
        return readings.map { r in
            rowInsert(
                reading,
                postgreSQLValues
                    ? [
                        "label": .text(r.label), "value": plain(r.value).storedValue, "optionalValue": plain(r.optionalValue).storedValue,
                        "single": (r.single.isNaN ? Float.nan : r.single).storedValue,
                        "at": r.at.map { Date(timeIntervalSinceReferenceDate: plain($0.timeIntervalSinceReferenceDate) ?? 0) }.storedValue
                    ]
                    : [
                        "label": .text(r.label), "value": r.value.storedValue, "optionalValue": r.optionalValue.storedValue,
                        "single": r.single.storedValue, "at": r.at.storedValue
                    ])
        }
            + notes.filter { n in !postgreSQLValues || !(n.text + (n.optionalText ?? "")).contains("\0") }.map { n in
                rowInsert(note, ["key": .text(n.key), "text": .text(n.text), "optionalText": n.optionalText.storedValue])
            }
    }
}

// MARK: Expected answers in plain Swift

/// The documented order of floating-point values in a sort: nil first, then numbers (−0.0 and
/// 0.0 tie), then NaNs, by their bit pattern as an unsigned number.
func floatingOrder<T: BinaryFloatingPoint>(_ a: T?, _ b: T?) -> Int where T.RawSignificand: FixedWidthInteger {
    switch (a, b) {
    case (nil, nil): return 0
    case (nil, _): return -1
    case (_, nil): return 1
    case let (x?, y?):
        switch (x.isNaN, y.isNaN) {
        case (true, true): return cmp(nanKey(x), nanKey(y))
        case (true, false): return 1
        case (false, true): return -1
        case (false, false): return x < y ? -1 : (x == y ? 0 : 1)
        }
    }
}

/// A NaN's sign and payload as an unsigned number, ordered as the stored bit patterns are.
func nanKey<T: BinaryFloatingPoint>(_ x: T) -> UInt64 where T.RawSignificand: FixedWidthInteger {
    UInt64(x.sign == .minus ? 1 : 0) << 63 | UInt64(x.exponentBitPattern) << 52 | UInt64(x.significandBitPattern)
        << (52 - T.significandBitCount)
}

/// Text as the stores compare it: by UTF-8 bytes.
func bytesEqual(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }
func bytesLess(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }
func bytesOrder(_ a: String?, _ b: String?) -> Int {
    switch (a, b) {
    case (nil, nil): return 0
    case (nil, _): return -1
    case (_, nil): return 1
    case let (x?, y?): return bytesLess(x, y) ? -1 : (bytesEqual(x, y) ? 0 : 1)
    }
}
func bytesContain(_ haystack: String, _ needle: String) -> Bool {
    let h = Array(haystack.utf8), n = Array(needle.utf8)
    if n.isEmpty { return true }
    guard n.count <= h.count else { return false }
    return (0...(h.count - n.count)).contains { h[$0..<($0 + n.count)].elementsEqual(n) }
}
func bytesStart(_ text: String, _ prefix: String) -> Bool { text.utf8.starts(with: prefix.utf8) }

extension CrossCase {
    static func readings(_ name: String, _ predicate: Predicate<Reading>, _ expect: (ReadingSpec) -> Bool) -> CrossCase {
        fetch(name, FetchRequest(predicate: predicate), key: "label", expected: CrossData.readings.filter(expect).map(\.label))
    }

    static func notes(_ name: String, _ predicate: Predicate<Note>, _ expect: (NoteSpec) -> Bool) -> CrossCase {
        fetch(name, FetchRequest(predicate: predicate), key: "key", expected: CrossData.notes.filter(expect).map(\.key))
    }
}

extension CrossCases {
    static func floatingPoint() -> [CrossCase] {
        let constants: [(String, Double)] = [
            ("0", 0), ("-0", -0.0), ("1.5", 1.5), ("-1", -1), ("nan", .nan), ("inf", .infinity),
            ("-inf", -.infinity), ("subnormal", .leastNonzeroMagnitude)
        ]
        var cases: [CrossCase] = []
        for (n, c) in constants {
            cases += [
                .readings("double == \(n)", #Predicate { $0.value == c }) { $0.value == c },
                .readings("double != \(n)", #Predicate { $0.value != c }) { $0.value != c },
                .readings("double < \(n)", #Predicate { $0.value < c }) { $0.value < c },
                .readings("double <= \(n)", #Predicate { $0.value <= c }) { $0.value <= c },
                .readings("double > \(n)", #Predicate { $0.value > c }) { $0.value > c },
                .readings("double >= \(n)", #Predicate { $0.value >= c }) { $0.value >= c },
                .readings("!(double < \(n))", #Predicate { !($0.value < c) }) { !($0.value < c) },
                .readings("!(double >= \(n))", #Predicate { !($0.value >= c) }) { !($0.value >= c) },
                .readings("\(n) < double", #Predicate { c < $0.value }) { c < $0.value },
                .readings("double? == \(n)", #Predicate { $0.optionalValue == c }) { $0.optionalValue == c },
                .readings("double? != \(n)", #Predicate { $0.optionalValue != c }) { $0.optionalValue != c },
                .readings("double! < \(n)", #Predicate { $0.optionalValue! < c }) { r in r.optionalValue.map { $0 < c } ?? false },
                .readings("double! >= \(n)", #Predicate { $0.optionalValue! >= c }) { r in r.optionalValue.map { $0 >= c } ?? false },
                .readings("!(double! > \(n))", #Predicate { !($0.optionalValue! > c) }) { r in r.optionalValue.map { !($0 > c) } ?? false },
                .readings("double ?? \(n) <= 0", #Predicate { ($0.optionalValue ?? c) <= 0 }) { ($0.optionalValue ?? c) <= 0 }
            ]
        }
        let floats: [(String, Float)] = [("0", 0), ("-0", -0.0), ("1.5", 1.5), ("nan", .nan), ("inf", .infinity), ("0.1", 0.1)]
        for (n, c) in floats {
            cases += [
                .readings("float == \(n)", #Predicate { $0.single == c }) { $0.single == c },
                .readings("float != \(n)", #Predicate { $0.single != c }) { $0.single != c },
                .readings("float < \(n)", #Predicate { $0.single < c }) { $0.single < c },
                .readings("float > \(n)", #Predicate { $0.single > c }) { $0.single > c },
                .readings("!(float <= \(n))", #Predicate { !($0.single <= c) }) { !($0.single <= c) }
            ]
        }
        let cutoff = Date(timeIntervalSinceReferenceDate: 3), nanDate = Date(timeIntervalSinceReferenceDate: .nan)
        let zeros = [0.0], nans = [Double.nan], negativeZeros = [-0.0], mixed: [Double?] = [.nan, 1.5, nil]
        let floatRange: ClosedRange<Float> = -1...1
        let range = -1.0...1.5, negativeZeroRange = -0.0...0.0, from = 0.0..., upTo = ..<0.0
        cases += [
            .readings("date! > cutoff", #Predicate { $0.at! > cutoff }) { r in r.at.map { $0 > cutoff } ?? false },
            // A date compares as its interval (`Date`'s own `<=` is `!(b < a)`, true for a NaN date).
            .readings("date! <= cutoff", #Predicate { $0.at! <= cutoff }) { r in
                r.at.map { $0.timeIntervalSinceReferenceDate <= cutoff.timeIntervalSinceReferenceDate } ?? false
            },
            .readings("!(date! < cutoff)", #Predicate { !($0.at! < cutoff) }) { r in r.at.map { !($0 < cutoff) } ?? false },
            .readings("date == cutoff", #Predicate { $0.at == cutoff }) { $0.at == cutoff },
            .readings("date != cutoff", #Predicate { $0.at != cutoff }) { $0.at != cutoff },
            .readings("date == NaN date", #Predicate { $0.at == nanDate }) { $0.at == nanDate },
            .readings("date != NaN date", #Predicate { $0.at != nanDate }) { $0.at != nanDate },
            .readings("date! > NaN date", #Predicate { $0.at! > nanDate }) { r in r.at.map { $0 > nanDate } ?? false },
            .readings("double < double!", #Predicate { $0.value < $0.optionalValue! }) { r in r.optionalValue.map { r.value < $0 } ?? false
            },
            .readings("double >= double!", #Predicate { $0.value >= $0.optionalValue! }) { r in
                r.optionalValue.map { r.value >= $0 } ?? false
            },
            .readings("!(double <= double!)", #Predicate { !($0.value <= $0.optionalValue!) }) { r in
                r.optionalValue.map { !(r.value <= $0) } ?? false
            },
            .readings("double! == double", #Predicate { $0.optionalValue! == $0.value }) { r in
                r.optionalValue.map { $0 == r.value } ?? false
            },
            .readings("double! != double (nil is different)", #Predicate { $0.optionalValue! != $0.value }) { r in
                r.optionalValue.map { $0 != r.value } ?? true
            },
            .readings("double * 2 > 1", #Predicate { $0.value * 2 > 1 }) { $0.value * 2 > 1 },
            .readings("!(double * 2 > 1)", #Predicate { !($0.value * 2 > 1) }) { !($0.value * 2 > 1) },
            .readings("-double < 0", #Predicate { -$0.value < 0 }) { -$0.value < 0 },
            .readings("double - double == 0", #Predicate { $0.value - $0.value == 0 }) { $0.value - $0.value == 0 },
            .readings("double * 0 != 0", #Predicate { $0.value * 0 != 0 }) { $0.value * 0 != 0 },
            .readings("double + double? >= 1", #Predicate { $0.value + $0.optionalValue! >= 1 }) { r in
                r.optionalValue.map { r.value + $0 >= 1 } ?? false
            },
            .readings("double / 0 > 0", #Predicate { $0.value / 0 > 0 }) { $0.value / 0 > 0 },
            .readings("double / double? is infinite or NaN", #Predicate { $0.value / $0.optionalValue! != 1 }) { r in
                r.optionalValue.map { r.value / $0 != 1 } ?? true  // nil: != is null-safe
            },
            .readings("IN [0]", #Predicate { zeros.contains($0.value) }) { zeros.contains($0.value) },
            .readings("IN [nan]", #Predicate { nans.contains($0.value) }) { nans.contains($0.value) },
            .readings("IN [-0]", #Predicate { negativeZeros.contains($0.value) }) { negativeZeros.contains($0.value) },
            .readings("NOT IN [0]", #Predicate { !zeros.contains($0.value) }) { !zeros.contains($0.value) },
            .readings("optional IN [nan, 1.5, nil]", #Predicate { mixed.contains($0.optionalValue) }) { mixed.contains($0.optionalValue) },
            .readings("IN literal [0, 2.5]", #Predicate { [0.0, 2.5].contains($0.value) }) { [0.0, 2.5].contains($0.value) },
            .readings("double in closed range", #Predicate { range.contains($0.value) }) { range.contains($0.value) },
            .readings("double not in closed range", #Predicate { !range.contains($0.value) }) { !range.contains($0.value) },
            .readings("range -0...0", #Predicate { negativeZeroRange.contains($0.value) }) { negativeZeroRange.contains($0.value) },
            .readings("range built in the predicate", #Predicate { (0.0..<2.0).contains($0.value) }) { (0.0..<2.0).contains($0.value) },
            .readings("partial range from 0", #Predicate { from.contains($0.value) }) { from.contains($0.value) },
            .readings("partial range up to 0", #Predicate { upTo.contains($0.value) }) { upTo.contains($0.value) },
            .readings("float range", #Predicate { floatRange.contains($0.single) }) { floatRange.contains($0.single) }
        ]
        let readings = CrossData.readings
        cases += [
            .sorted(
                "sort by double", FetchRequest<Reading>(sortBy: [SortDescriptor(\.value)]), key: "label", items: readings, keyOf: \.label
            ) {
                floatingOrder($0.value, $1.value)
            },
            .sorted(
                "sort by double reverse, limited", FetchRequest<Reading>(sortBy: [SortDescriptor(\.value, order: .reverse)], fetchLimit: 8),
                key: "label", items: readings, keyOf: \.label
            ) { floatingOrder($1.value, $0.value) },
            .sorted(
                "sort by double?", FetchRequest<Reading>(sortBy: [SortDescriptor(\.optionalValue)]), key: "label", items: readings,
                keyOf: \.label
            ) {
                floatingOrder($0.optionalValue, $1.optionalValue)
            },
            .sorted(
                "sort by float reverse", FetchRequest<Reading>(sortBy: [SortDescriptor(\.single, order: .reverse)]), key: "label",
                items: readings,
                keyOf: \.label
            ) { floatingOrder($1.single, $0.single) },
            .sorted(
                "sort by date, then double", FetchRequest<Reading>(sortBy: [SortDescriptor(\.at), SortDescriptor(\.value)]), key: "label",
                items: readings, keyOf: \.label
            ) {
                then(
                    floatingOrder($0.at?.timeIntervalSinceReferenceDate, $1.at?.timeIntervalSinceReferenceDate),
                    floatingOrder($0.value, $1.value))
            },
            .sorted(
                "predicate + sort by double?",
                FetchRequest<Reading>(predicate: #Predicate { $0.optionalValue != nil }, sortBy: [SortDescriptor(\.optionalValue)]),
                key: "label", items: readings, keyOf: \.label, where: { $0.optionalValue != nil }
            ) { floatingOrder($0.optionalValue, $1.optionalValue) }
        ]
        return cases
    }

    static func unusualStrings() -> [CrossCase] {
        let needles: [(String, String)] = [
            ("empty", ""), ("NUL", "\0"), ("a NUL", "a\0"), ("NUL a", "\0a"), ("a NUL b", "a\0b"), ("a", "a"),
            ("e", "e"), ("combining acute", "\u{301}"), ("precomposed é", "\u{E9}"), ("decomposed é", "e\u{301}"),
            ("𝔘", "𝔘"), ("𝔘 NUL", "𝔘\0"), ("NUL 𝔘", "\0𝔘"), ("🎉", "🎉"), ("🇫", "🇫"), ("ss", "ss"),
            ("A NUL", "A\0"), ("Ü", "Ü")
        ]
        let same = ComparisonResult.orderedSame, ascending = ComparisonResult.orderedAscending
        let descending = ComparisonResult.orderedDescending
        var cases: [CrossCase] = []
        for (n, t) in needles {
            cases += [
                .notes("text == \(n)", #Predicate { $0.text == t }) { bytesEqual($0.text, t) },
                .notes("text != \(n)", #Predicate { $0.text != t }) { !bytesEqual($0.text, t) },
                .notes("text < \(n)", #Predicate { $0.text < t }) { bytesLess($0.text, t) },
                .notes("text <= \(n)", #Predicate { $0.text <= t }) { !bytesLess(t, $0.text) },
                .notes("text > \(n)", #Predicate { $0.text > t }) { bytesLess(t, $0.text) },
                .notes("text >= \(n)", #Predicate { $0.text >= t }) { !bytesLess($0.text, t) },
                .notes("text contains \(n)", #Predicate { $0.text.contains(t) }) { bytesContain($0.text, t) },
                .notes("text starts with \(n)", #Predicate { $0.text.starts(with: t) }) { bytesStart($0.text, t) },
                .notes("!(text starts with \(n))", #Predicate { !$0.text.starts(with: t) }) { !bytesStart($0.text, t) },
                .notes("text! starts with \(n)", #Predicate { $0.optionalText!.starts(with: t) }) { n in
                    n.optionalText.map { bytesStart($0, t) } ?? false
                },
                .notes("text? contains \(n) == true", #Predicate { $0.optionalText?.contains(t) == true }) { n in
                    n.optionalText.map { bytesContain($0, t) } == true
                },
                // An empty needle (or one that folds to nothing) is never found, as by Foundation.
                .notes("text localizedStandardContains \(n)", #Predicate { $0.text.localizedStandardContains(t) }) {
                    !TextFolding.fold(t).isEmpty && bytesContain(TextFolding.fold($0.text), TextFolding.fold(t))
                },
                .notes("text caseInsensitiveCompare \(n) == same", #Predicate { $0.text.caseInsensitiveCompare(t) == same }) {
                    bytesEqual(TextFolding.fold($0.text), TextFolding.fold(t))
                },
                .notes("text caseInsensitiveCompare \(n) == ascending", #Predicate { $0.text.caseInsensitiveCompare(t) == ascending }) {
                    bytesLess(TextFolding.fold($0.text), TextFolding.fold(t))
                },
                .notes("text caseInsensitiveCompare \(n) != descending", #Predicate { $0.text.caseInsensitiveCompare(t) != descending }) {
                    !bytesLess(TextFolding.fold(t), TextFolding.fold($0.text))
                },
                .notes("text IN [\(n), ab]", #Predicate { [t, "ab"].contains($0.text) }) { bytesEqual($0.text, t) || $0.text == "ab" }
            ]
        }
        let notes = CrossData.notes
        cases += [
            .notes("text contains text?", #Predicate { $0.text.contains($0.optionalText!) }) { n in
                n.optionalText.map { bytesContain(n.text, $0) } ?? false
            },
            .notes("text starts with text?", #Predicate { $0.text.starts(with: $0.optionalText!) }) { n in
                n.optionalText.map { bytesStart(n.text, $0) } ?? false
            },
            .notes("text < text?", #Predicate { $0.text < $0.optionalText! }) { n in n.optionalText.map { bytesLess(n.text, $0) } ?? false
            },
            .sorted("sort notes by text", FetchRequest<Note>(sortBy: [SortDescriptor(\.text)]), key: "key", items: notes, keyOf: \.key) {
                bytesOrder($0.text, $1.text)
            },
            .sorted(
                "sort notes by text? reverse", FetchRequest<Note>(sortBy: [SortDescriptor(\.optionalText, order: .reverse)]), key: "key",
                items: notes, keyOf: \.key
            ) { bytesOrder($1.optionalText, $0.optionalText) },
            .sorted(
                "sort notes by text, lexical comparator, reverse",
                FetchRequest<Note>(sortBy: [SortDescriptor(\.text, comparator: .lexical, order: .reverse)]), key: "key", items: notes,
                keyOf: \.key
            ) { bytesOrder($1.text, $0.text) }
        ]
        return cases
    }
}

@Suite("Predicates: unusual values in both stores")
struct CrossStoreValueTests {
    /// A folded sort (case- and diacritic-insensitive, as `SortKey.folded` asks) orders by the
    /// folded text's code points, ties in insertion order, in every store: accents, case, `ß`,
    /// marks, emoji and the empty string included.
    @Test(.crossStores) func foldedSortAgrees() throws {
        let stores = try #require(CrossStores.current, "the .crossStores trait provides the stores")
        func keys(_ coordinator: PersistentStoreCoordinator, _ type: ManagedObject.Type, _ attribute: String, ascending: Bool) throws
            -> [String]
        {
            let entity = try #require(coordinator.managedObjectModel.entity(for: type))
            let property = try #require(entity.propertiesByName[attribute] as? AttributeDescription)
            let key = type == Note.self ? "key" : "name"
            let sort = SortKey(path: PropertyPath(scope: 0, attribute: property), ascending: ascending, folded: true)
            let store = try #require(coordinator.persistentStores.first)
            return try store.engine.fetch(StoreFetch(entity: entity, sortKeys: [sort])).compactMap {
                String(storedValue: named($0)[key] ?? .null)
            }
        }
        func expected(_ items: [(key: String, text: String?)], ascending: Bool) -> [String] {
            let folded = items.enumerated().map {
                (offset: $0.offset, key: $0.element.key, text: $0.element.text.map { TextFolding.fold($0) })
            }
            return folded.sorted { a, b in
                let c = ascending ? bytesOrder(a.text, b.text) : bytesOrder(b.text, a.text)
                return c != 0 ? c < 0 : a.offset < b.offset
            }.map(\.key)
        }
        for ascending in [true, false] {
            let cases: [(ManagedObject.Type, String, [(key: String, text: String?)])] = [
                (Person.self, "name", CrossData.people.map { ($0.name, $0.name) }),
                (Note.self, "text", CrossData.notes.map { ($0.key, $0.text) }),
                (Note.self, "optionalText", CrossData.notes.map { ($0.key, $0.optionalText) })
            ]
            for (type, attribute, items) in cases {
                let want = expected(items, ascending: ascending)
                #expect(try keys(stores.sqlite, type, attribute, ascending: ascending) == want, "SQLite \(attribute) \(ascending)")
                #expect(try keys(stores.memory, type, attribute, ascending: ascending) == want, "in-memory \(attribute) \(ascending)")
                if let (store, reference) = stores.postgreSQL {
                    let answer = try keys(reference, type, attribute, ascending: ascending)
                    #expect(try keys(store, type, attribute, ascending: ascending) == answer, "PostgreSQL \(attribute) \(ascending)")
                }
            }
        }
    }

    /// `.endsWith` (part of the query language, though `#Predicate` has no form for it) cuts
    /// suffixes from the bytes in both stores, NUL characters included.
    @Test(.crossStores) func endsWithAgrees() throws {
        let stores = try #require(CrossStores.current, "the .crossStores trait provides the stores")
        for needle in ["", "\0", "a\0", "\0a", "b", "\u{301}", "𝔘", "\0𝔘", "🎉\0", "ü", "\0\0"] {
            let expected = CrossData.notes.filter { $0.text.utf8.reversed().starts(with: needle.utf8.reversed()) }.map(\.key)
            for coordinator in [stores.sqlite, stores.memory] {
                let entity = try #require(coordinator.managedObjectModel.entity(for: Note.self))
                let text = try #require(entity.propertiesByName["text"] as? AttributeDescription)
                let test = QueryExpression.string(.endsWith, .path(PropertyPath(scope: 0, attribute: text)), .constant(.text(needle)))
                for predicate in [test, .not(test)] {
                    let store = try #require(coordinator.persistentStores.first)
                    let keys = try store.engine.fetch(StoreFetch(entity: entity, predicate: predicate)).compactMap {
                        String(storedValue: named($0)["key"] ?? .null)
                    }
                    let want =
                        predicate.description.hasPrefix("NOT") ? CrossData.notes.map(\.key).filter { !expected.contains($0) } : expected
                    #expect(keys.sorted() == want.sorted(), "\(store.type) \(predicate)")
                }
            }
        }
    }
}
