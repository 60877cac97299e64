import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

// Every supported predicate form, run against the same dataset in a SQLite store and in an
// in-memory store: both must give the same answer (the SQL translation and `QueryEvaluator`
// follow the same documented semantics), and that answer must be the one computed here in plain
// Swift from the dataset arrays.

// MARK: The dataset

struct TownSpec: Sendable {
    let name: String
    let population: Int
}

struct ClubSpec: Sendable {
    let title: String
}

struct PersonSpec: Sendable {
    let name: String
    let email: String?
    let age: Int
    let score: Double
    let createdAt: Date?
    /// Index into `CrossData.towns`.
    let townIndex: Int?
    /// Indexes into `CrossData.clubs`.
    let clubIndexes: [Int]

    var town: TownSpec? { townIndex.map { CrossData.towns[$0] } }
    var clubs: [ClubSpec] { clubIndexes.map { CrossData.clubs[$0] } }
    /// The other members of this person's clubs (and this person).
    var clubMates: [[PersonSpec]] {
        clubIndexes.map { c in CrossData.people.filter { $0.clubIndexes.contains(c) } }
    }
}

struct SampleSpec: Sendable {
    let s: String
    let i: Int
    let i16: Int16
    let i32: Int32
    let i64: Int64
    let d: Double
    let f: Float
    let b: Bool
    let date: Date?
    let uuid: UUID?
    let url: URL?
    let decimal: Decimal?
    let optionalInt: Int?
    let optionalString: String?
}

struct ShapeSpec: Sendable {
    let label: String
    let isCircle: Bool
    let size: Double
}

enum CrossData {
    static func day(_ n: Int) -> Date { Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(n) * 86_400.25) }
    static func dec(_ s: String) -> Decimal { Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")) ?? .nan }
    static func uuid(_ n: UInt8) -> UUID { UUID(uuid: (n, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, n)) }

    static let towns: [TownSpec] = [
        TownSpec(name: "Paris", population: 2_100_000),  // 0
        TownSpec(name: "Lyon", population: 520_000),  // 1
        TownSpec(name: "Évry", population: 50_000),  // 2
        TownSpec(name: "évian", population: 9_000),  // 3
        TownSpec(name: "Zürich", population: 400_000),  // 4
        TownSpec(name: "Oslo", population: 700_000),  // 5
        TownSpec(name: "nantes", population: 320_000),  // 6
        TownSpec(name: "Ghost Town", population: 0)  // 7: nobody lives here
    ]

    static let clubs: [ClubSpec] = [
        ClubSpec(title: "Chess"), ClubSpec(title: "Go"), ClubSpec(title: "Running"), ClubSpec(title: "Book Club"),
        ClubSpec(title: "Empty")  // no members
    ]

    static let people: [PersonSpec] = {
        func p(_ name: String, _ email: String?, _ age: Int, _ score: Double, _ created: Int?, _ town: Int?, _ clubs: [Int]) -> PersonSpec {
            PersonSpec(name: name, email: email, age: age, score: score, createdAt: created.map(day), townIndex: town, clubIndexes: clubs)
        }
        return [
            p("Ada", "ada@example.com", 36, 9.5, 1, 0, [0]),
            p("bob", nil, 30, 7, 2, 1, [0, 1]),
            p("Émile", "emile@x.fr", 40, 8, nil, nil, []),
            p("émilie", "Emilie@X.fr", 41, 8.25, 3, 2, [2]),
            p("Zoë", "zoe@example.com", 25, 6.5, 4, 0, [1, 2]),
            p("zoe", "ZOE@EXAMPLE.COM", 29, 6.5, nil, 4, [1]),
            p("Chloé", "", 18, 0, 5, 3, [3]),
            p("CHLOE", nil, 17, -2.5, 6, 3, []),
            p("", nil, 0, 0, nil, nil, []),
            p("🎉 Party", "party@🎉.io", 100, 10, 7, 5, [0, 1, 2, 3]),
            p("Ünal", "unal@x.tr", 65, 5.75, 8, 4, [2]),
            p("Øyvind", "oyvind@x.no", 31, 4, nil, 5, [0]),
            p("Ángel", "angel@x.es", 39, 3.5, 9, nil, [1]),
            p("angela", "Angela@x.es", 30, 7.25, 10, 1, [3]),
            p("Bruno", nil, 44, 1, 11, 6, []),
            p("brünhilde", "b@x.de", 52, 2, 12, 4, [2, 3]),
            p("Carl", "carl@x.se", -1, 0.5, nil, 0, [0]),
            p("carla", "Carl@x.se", 23, 9, 13, 0, []),
            p("Dora", nil, 35, 8.5, 14, 6, [1]),
            p("dominique", "dom@x.fr", 35, 8.5, 15, 2, [0]),
            p("Eve", "eve@x.com", 28, 7, nil, nil, [2]),
            p("ève", "eve@x.fr", 28, 7, 16, 1, []),
            p("Frank", "frank@x.com", 61, 6, 17, 1, [3]),
            p("françois", nil, 47, 5, 18, 2, [0, 3]),
            p("Gus", "gus@x.com", 12, 3, 19, 3, []),
            p("Hélène", "helene@x.fr", 58, 9.75, 20, 0, [1]),
            p("HELENE", "HELENE@X.FR", 58, 9.75, nil, 0, []),
            p("Ivan", "ivan@x.ru", 33, 4.5, 21, nil, [0, 1]),
            p("Jürgen", "j@x.de", 45, 6.25, 22, 4, []),
            p("kim", nil, 27, 8, 23, 5, [2]),
            p("Léa", "lea@x.fr", 22, 9, 24, 2, [3]),
            p("LEA 🎸", "lea@rock.fr", 22, 9, 25, 2, []),
            p("Mo", "mo@x.com", 40, 5.5, 26, nil, [1]),
            p("Noémie", "noemie@x.fr", 19, 7.75, nil, 3, [0]),
            p("Olaf", "olaf@x.no", 50, 2.5, 27, 5, []),
            p("Pía", "pia@x.es", 30, 6, 28, 1, [2]),
            p("quinn", nil, 40, 7, 29, nil, []),
            p("Rémy", "remy@x.fr", 29, 8, 30, 6, [1, 3]),
            p("Sam", "sam@x.com", 64, 3.25, 31, 1, []),
            p("Tom", "tom@x.com", 30, 5, 32, nil, [0])
        ]
    }()

    static let samples: [SampleSpec] = [
        SampleSpec(
            s: "a", i: 1, i16: 1, i32: 10, i64: 1 << 40, d: 1.5, f: 0.5, b: true, date: day(1), uuid: uuid(1),
            url: URL(string: "https://a.example/x"), decimal: dec("10"), optionalInt: 5, optionalString: "x"),
        SampleSpec(
            s: "b", i: -3, i16: -1, i32: 20, i64: 0, d: -2.25, f: 1.5, b: false, date: nil, uuid: nil,
            url: nil, decimal: dec("9.5"), optionalInt: nil, optionalString: nil),
        SampleSpec(
            s: "c", i: 0, i16: 300, i32: -5, i64: -(1 << 40), d: 0, f: 2.75, b: true, date: day(5), uuid: uuid(2),
            url: URL(string: "https://b.example"), decimal: dec("-1"), optionalInt: 0, optionalString: ""),
        SampleSpec(
            s: "d", i: 7, i16: 7, i32: 7, i64: 7, d: 100.5, f: -1, b: false, date: day(3), uuid: uuid(3),
            url: URL(string: "file:///tmp/x"), decimal: dec("100.25"), optionalInt: -5, optionalString: "É"),
        SampleSpec(
            s: "e", i: 42, i16: 42, i32: 42, i64: 42, d: 42, f: 42, b: true, date: day(2), uuid: nil,
            url: nil, decimal: nil, optionalInt: 5, optionalString: "y"),
        SampleSpec(
            s: "f", i: 10, i16: -300, i32: 0, i64: 10, d: 9.5, f: 0.25, b: false, date: day(4), uuid: uuid(4),
            url: nil, decimal: dec("0"), optionalInt: nil, optionalString: "x"),
        SampleSpec(
            s: "g", i: 5, i16: 5, i32: 5, i64: 5, d: 2.75, f: 2.75, b: true, date: nil, uuid: uuid(5),
            url: URL(string: "https://a.example/y"), decimal: dec("2.75"), optionalInt: 100, optionalString: "é")
    ]

    static let shapes: [ShapeSpec] = [
        ShapeSpec(label: "c1", isCircle: true, size: 1),
        ShapeSpec(label: "s1", isCircle: false, size: 1),
        ShapeSpec(label: "c2", isCircle: true, size: 2.5),
        ShapeSpec(label: "s2", isCircle: false, size: 4),
        ShapeSpec(label: "c3", isCircle: true, size: 10)
    ]

    /// Inserts the dataset, in the same order, through `coordinator`.
    /// Inserts the dataset; `postgreSQLValues`: only the values a PostgreSQL store can hold
    /// (see ``valueRows(_:postgreSQLValues:)``).
    static func populate(_ coordinator: PersistentStoreCoordinator, postgreSQLValues: Bool = false) throws {
        let model = coordinator.managedObjectModel
        let town = try #require(model.entity(for: Town.self))
        let club = try #require(model.entity(for: Club.self))
        let person = try #require(model.entity(for: Person.self))
        let sample = try #require(model.entity(for: Sample.self))
        let circle = try #require(model.entity(for: Circle.self))
        let square = try #require(model.entity(for: Square.self))
        let clubsRelationship = try #require(person.relationshipsByName["clubs"])

        let townRows = towns.map { rowInsert(town, ["name": .text($0.name), "population": $0.population.storedValue]) }
        let clubRows = clubs.map { rowInsert(club, ["title": .text($0.title)]) }
        let personRows = people.map { p in
            rowInsert(
                person,
                [
                    "name": .text(p.name), "email": p.email.storedValue, "age": p.age.storedValue,
                    "score": p.score.storedValue, "createdAt": p.createdAt.storedValue
                ], references: p.townIndex.map { ["town": townRows[$0].objectID] } ?? [:])
        }
        let sampleRows = samples.map { s in
            rowInsert(
                sample,
                [
                    "s": .text(s.s), "i": s.i.storedValue, "i16": s.i16.storedValue, "i32": s.i32.storedValue,
                    "i64": s.i64.storedValue, "d": s.d.storedValue, "f": s.f.storedValue, "b": s.b.storedValue,
                    "date": s.date.storedValue, "uuid": s.uuid.storedValue, "url": s.url.storedValue,
                    "decimal": s.decimal.storedValue, "optionalInt": s.optionalInt.storedValue,
                    "optionalString": s.optionalString.storedValue
                ])
        }
        let shapeRows = shapes.map { s in
            s.isCircle
                ? rowInsert(circle, ["label": .text(s.label), "radius": .real(s.size)])
                : rowInsert(square, ["label": .text(s.label), "side": .real(s.size)])
        }
        var changes = StoreChangeSet()
        changes.inserts =
            townRows + clubRows + personRows + sampleRows + shapeRows + (try valueRows(model, postgreSQLValues: postgreSQLValues))
        for (p, spec) in zip(personRows, people) {
            for c in spec.clubIndexes {
                changes.joinInserts.append(
                    JoinChange(relationship: clubsRelationship, source: p.objectID, destination: clubRows[c].objectID))
            }
        }
        _ = try coordinator.save(changes)
    }
}

/// The dataset in a SQLite store and in an in-memory store; and, when the PostgreSQL tests
/// run, in a PostgreSQL store next to an in-memory store holding the same values (PostgreSQL
/// text holds no NUL, and its NaN has no sign or payload: see
/// ``CrossData/valueRows(_:postgreSQLValues:)``). The stores are only read, so the cases of one
/// test share them (see ``CrossStoresScope``).
struct CrossStores: Sendable {
    let sqlite: PersistentStoreCoordinator
    let memory: PersistentStoreCoordinator
    /// The PostgreSQL store, and the in-memory store it must agree with.
    let postgreSQL: (store: PersistentStoreCoordinator, reference: PersistentStoreCoordinator)?

    init(in directory: TemporaryDirectory) throws {
        sqlite = try makeCoordinator(.sqlite, in: directory, model: try makeCrossModel())
        memory = try makeCoordinator(.inMemory, in: directory, model: sqlite.managedObjectModel)
        try CrossData.populate(sqlite)
        try CrossData.populate(memory)
        if PostgreSQLTestServer.enabled {
            let store = try makeCoordinator(.postgreSQL, in: directory, model: sqlite.managedObjectModel)
            let reference = try makeCoordinator(.inMemory, in: directory, model: sqlite.managedObjectModel)
            try CrossData.populate(store, postgreSQLValues: true)
            try CrossData.populate(reference, postgreSQLValues: true)
            postgreSQL = (store, reference)
        } else {
            postgreSQL = nil
        }
    }

    /// The stores of the enclosing ``CrossStoresScope``.
    @TaskLocal static var current: CrossStores?
}

/// Builds the stores once for a whole parameterized test (in its own temporary directory,
/// removed afterwards) instead of once per case.
struct CrossStoresScope: TestTrait, TestScoping {
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? self : nil
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let directory = try TemporaryDirectory("CrossStorePredicateTests")
        let stores = try CrossStores(in: directory)
        try await CrossStores.$current.withValue(stores) { try await function() }
        withExtendedLifetime(directory) {}
    }
}

extension Trait where Self == CrossStoresScope {
    /// The dataset, in both stores, for every case of the test.
    static var crossStores: Self { Self() }
}

// MARK: Cases

/// One fetch, run against both stores, with the answer expected from the dataset arrays.
struct CrossCase: Sendable, CustomTestStringConvertible {
    let name: String
    /// Whether the order of the results is defined (sorted, or limited / offset).
    let ordered: Bool
    /// The stable keys of the fetched objects, and `count(for:)` of the same request.
    let run: @Sendable (PersistentStoreCoordinator) throws -> (keys: [String], count: Int)
    /// The expected keys (in order when `ordered`).
    let expected: [String]

    var testDescription: String { name }

    static func fetch<T: ManagedObject>(_ name: String, _ request: FetchRequest<T>, key: String, expected: [String]) -> CrossCase {
        let dictionaries = {
            var r = request; r.propertiesToFetch = [key]; return r
        }()
        let ordered = !request.sortDescriptors.isEmpty || request.fetchLimit > 0 || request.fetchOffset > 0
        return CrossCase(
            name: name, ordered: ordered,
            run: { coordinator in
                let keys = try coordinator.fetchDictionaries(dictionaries).map { ($0[key] as? String) ?? "<missing>" }
                return (keys, try coordinator.count(for: request))
            }, expected: expected)
    }

    /// People matching `predicate`; expected: the people for which `expect` is true.
    static func people(_ name: String, _ predicate: Predicate<Person>, _ expect: (PersonSpec) -> Bool) -> CrossCase {
        fetch(name, FetchRequest(predicate: predicate), key: "name", expected: CrossData.people.filter(expect).map(\.name))
    }

    static func towns(_ name: String, _ predicate: Predicate<Town>, _ expect: (Int, TownSpec) -> Bool) -> CrossCase {
        let expected = CrossData.towns.enumerated().filter { expect($0.offset, $0.element) }.map(\.element.name)
        return fetch(name, FetchRequest(predicate: predicate), key: "name", expected: expected)
    }

    static func clubs(_ name: String, _ predicate: Predicate<Club>, _ expect: ([PersonSpec]) -> Bool) -> CrossCase {
        let expected = CrossData.clubs.indices.filter { c in expect(CrossData.people.filter { $0.clubIndexes.contains(c) }) }
            .map { CrossData.clubs[$0].title }
        return fetch(name, FetchRequest(predicate: predicate), key: "title", expected: expected)
    }

    static func samples(_ name: String, _ predicate: Predicate<Sample>, _ expect: (SampleSpec) -> Bool) -> CrossCase {
        fetch(name, FetchRequest(predicate: predicate), key: "s", expected: CrossData.samples.filter(expect).map(\.s))
    }

    /// A sorted (and possibly limited) fetch; expected: `items` filtered by `expect`, stably
    /// sorted by `order` (a three-way comparison), then offset and limited.
    static func sorted<T: ManagedObject, S>(
        _ name: String, _ request: FetchRequest<T>, key: String, items: [S], keyOf: (S) -> String,
        where expect: (S) -> Bool = { _ in true }, order: (S, S) -> Int
    ) -> CrossCase {
        let ranked = items.enumerated().filter { expect($0.element) }.sorted { a, b in
            let c = order(a.element, b.element)
            return c != 0 ? c < 0 : a.offset < b.offset  // ties: insertion (primary key) order
        }.map { keyOf($0.element) }
        var expected = Array(ranked.dropFirst(request.fetchOffset))
        if request.fetchLimit > 0 { expected = Array(expected.prefix(request.fetchLimit)) }
        return fetch(name, request, key: key, expected: expected)
    }
}

/// Three-way comparison, nil first (as ascending SQL / the evaluator order nil).
func cmp<T: Comparable>(_ a: T?, _ b: T?) -> Int {
    switch (a, b) {
    case (nil, nil): return 0
    case (nil, _): return -1
    case (_, nil): return 1
    case let (x?, y?): return x < y ? -1 : (x == y ? 0 : 1)
    }
}

/// Lexicographic combination of three-way comparisons.
func then(_ parts: Int...) -> Int { parts.first { $0 != 0 } ?? 0 }

/// Case- and diacritic-folded text, as Foundation folds it.
func folded(_ s: String) -> String { s.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil) }

/// Substring test as `#Predicate` evaluates `contains` on strings (an empty needle matches).
func has(_ haystack: String, _ needle: String) -> Bool { needle.isEmpty || haystack.contains(needle) }

enum CrossCases {
    static let cutoff = CrossData.day(15)

    static var all: [CrossCase] {
        comparisons() + samples() + logic() + optionals() + strings() + lists() + arithmetic() + toMany() + inheritance() + sorting()
            + floatingPoint() + unusualStrings()
    }

    static func comparisons() -> [CrossCase] {
        let cutoff = Self.cutoff
        return [
            .people("int ==", #Predicate { $0.age == 30 }) { $0.age == 30 },
            .people("int !=", #Predicate { $0.age != 30 }) { $0.age != 30 },
            .people("int <", #Predicate { $0.age < 18 }) { $0.age < 18 },
            .people("int <=", #Predicate { $0.age <= 18 }) { $0.age <= 18 },
            .people("int >", #Predicate { $0.age > 60 }) { $0.age > 60 },
            .people("int >=", #Predicate { $0.age >= 40 }) { $0.age >= 40 },
            .people("int attribute vs attribute", #Predicate { $0.age < $0.town!.population }) { p in
                p.town.map { p.age < $0.population } ?? false
            },
            .people("double ==", #Predicate { $0.score == 6.5 }) { $0.score == 6.5 },
            .people("double !=", #Predicate { $0.score != 7 }) { $0.score != 7 },
            .people("double <", #Predicate { $0.score < 0 }) { $0.score < 0 },
            .people("double <=", #Predicate { $0.score <= 5 }) { $0.score <= 5 },
            .people("double >", #Predicate { $0.score > 9 }) { $0.score > 9 },
            .people("double >=", #Predicate { $0.score >= 9.5 }) { $0.score >= 9.5 },
            .people("string ==", #Predicate { $0.name == "Émile" }) { $0.name == "Émile" },
            .people("string == empty", #Predicate { $0.name == "" }) { $0.name == "" },
            .people("string !=", #Predicate { $0.name != "Ada" }) { $0.name != "Ada" },
            .people("string <", #Predicate { $0.name < "B" }) { $0.name < "B" },
            .people("string <=", #Predicate { $0.name <= "Ada" }) { $0.name <= "Ada" },
            .people("string > (code points: accents after ASCII)", #Predicate { $0.name > "z" }) { $0.name > "z" },
            .people("string >=", #Predicate { $0.name >= "Ø" }) { $0.name >= "Ø" },
            .people("optional string == (nil is not equal)", #Predicate { $0.email == "eve@x.com" }) { $0.email == "eve@x.com" },
            .people("optional string != (nil is different)", #Predicate { $0.email != "eve@x.com" }) { $0.email != "eve@x.com" },
            .people("optional string forced <", #Predicate { $0.email! < "c" }) { p in p.email.map { $0 < "c" } ?? false },
            .people("date ==", #Predicate { $0.createdAt == cutoff }) { $0.createdAt == cutoff },
            .people("date != (nil is different)", #Predicate { $0.createdAt != cutoff }) { $0.createdAt != cutoff },
            .people("date <", #Predicate { $0.createdAt! < cutoff }) { p in p.createdAt.map { $0 < cutoff } ?? false },
            .people("date <=", #Predicate { $0.createdAt! <= cutoff }) { p in p.createdAt.map { $0 <= cutoff } ?? false },
            .people("date >", #Predicate { $0.createdAt! > cutoff }) { p in p.createdAt.map { $0 > cutoff } ?? false },
            .people("date >=", #Predicate { $0.createdAt! >= cutoff }) { p in p.createdAt.map { $0 >= cutoff } ?? false },
            .people("bool == bool of comparisons", #Predicate { ($0.age > 30) == ($0.score > 7) }) { ($0.age > 30) == ($0.score > 7) },
            .people("bool != bool of comparisons", #Predicate { ($0.age > 30) != ($0.score > 7) }) { ($0.age > 30) != ($0.score > 7) },
            .towns("to-one inverse: int on town", #Predicate { $0.population >= 400_000 }) { $1.population >= 400_000 }
        ]
    }

    static func samples() -> [CrossCase] {
        let ten = CrossData.dec("10"), zero = CrossData.dec("0"), nine = CrossData.dec("9"), fifty = CrossData.dec("50")
        let decimals = [ten, CrossData.dec("-1")]
        let day3 = CrossData.day(3)
        let big: Int64 = 1 << 39
        let u2 = CrossData.uuid(2)
        let url = URL(string: "https://a.example/x")
        return [
            .samples("bool", #Predicate { $0.b }) { $0.b },
            .samples("!bool", #Predicate { !$0.b }) { !$0.b },
            .samples("bool == false", #Predicate { $0.b == false }) { $0.b == false },
            .samples("bool != true", #Predicate { $0.b != true }) { $0.b != true },
            .samples("bool && int", #Predicate { $0.b && $0.i > 1 }) { $0.b && $0.i > 1 },
            .samples("decimal ==", #Predicate { $0.decimal == ten }) { $0.decimal == ten },
            .samples("decimal != (nil is different)", #Predicate { $0.decimal != ten }) { $0.decimal != ten },
            .samples("decimal < (numeric, not text)", #Predicate { $0.decimal! < ten }) { s in s.decimal.map { $0 < ten } ?? false },
            .samples("decimal <=", #Predicate { $0.decimal! <= ten }) { s in s.decimal.map { $0 <= ten } ?? false },
            .samples("decimal >", #Predicate { $0.decimal! > ten }) { s in s.decimal.map { $0 > ten } ?? false },
            .samples("decimal >=", #Predicate { $0.decimal! >= ten }) { s in s.decimal.map { $0 >= ten } ?? false },
            .samples("decimal ?? constant >", #Predicate { ($0.decimal ?? zero) > nine }) { ($0.decimal ?? zero) > nine },
            .samples("decimal ?? constant <", #Predicate { ($0.decimal ?? zero) < nine }) { ($0.decimal ?? zero) < nine },
            .samples("decimal ternary >", #Predicate { ($0.b ? $0.decimal! : zero) > nine }) { s in
                s.b ? (s.decimal.map { $0 > nine } ?? false) : zero > nine
            },
            .samples("decimal in range", #Predicate { (nine...fifty).contains($0.decimal!) }) { s in
                s.decimal.map { (nine...fifty).contains($0) } ?? false
            },
            .samples("decimal in list", #Predicate { decimals.contains($0.decimal!) }) { s in
                s.decimal.map { decimals.contains($0) } ?? false
            },
            .samples("decimal ?? in list", #Predicate { decimals.contains($0.decimal ?? zero) }) { decimals.contains($0.decimal ?? zero) },
            .samples("decimal ?? in range", #Predicate { (nine...fifty).contains($0.decimal ?? zero) }) {
                (nine...fifty).contains($0.decimal ?? zero)
            },
            .samples("decimal range bounded by the attribute", #Predicate { ($0.decimal!...fifty).contains(nine) }) { s in
                s.decimal.map { $0 <= nine && nine <= fifty } ?? false
            },
            .samples("decimal == nil", #Predicate { $0.decimal == nil }) { $0.decimal == nil },
            .samples("int16 >", #Predicate { $0.i16 > 5 }) { $0.i16 > 5 },
            .samples("int32 <=", #Predicate { $0.i32 <= 7 }) { $0.i32 <= 7 },
            .samples("int64 >= captured", #Predicate { $0.i64 >= big }) { $0.i64 >= big },
            .samples("float <", #Predicate { $0.f < 1 }) { $0.f < 1 },
            .samples("float == fraction", #Predicate { $0.f == 2.75 }) { $0.f == 2.75 },
            .samples("double != ", #Predicate { $0.d != 42 }) { $0.d != 42 },
            .samples("optional int == nil", #Predicate { $0.optionalInt == nil }) { $0.optionalInt == nil },
            .samples("optional int != 5 (nil is different)", #Predicate { $0.optionalInt != 5 }) { $0.optionalInt != 5 },
            .samples("optional int ?? 0 <= 0", #Predicate { ($0.optionalInt ?? 0) <= 0 }) { ($0.optionalInt ?? 0) <= 0 },
            .samples("optional string == empty", #Predicate { $0.optionalString == "" }) { $0.optionalString == "" },
            .samples("optional date >", #Predicate { $0.date! > day3 }) { s in s.date.map { $0 > day3 } ?? false },
            .samples("optional date <= (nil unknown)", #Predicate { $0.date! <= day3 }) { s in s.date.map { $0 <= day3 } ?? false },
            .samples("uuid ==", #Predicate { $0.uuid == u2 }) { $0.uuid == u2 },
            .samples("uuid != nil", #Predicate { $0.uuid != nil }) { $0.uuid != nil },
            .samples("url ==", #Predicate { $0.url == url }) { $0.url == url }
        ]
    }

    static func logic() -> [CrossCase] {
        let cutoff = Self.cutoff
        return [
            .people("&&", #Predicate { $0.age > 30 && $0.score > 7 }) { $0.age > 30 && $0.score > 7 },
            .people("||", #Predicate { $0.age < 18 || $0.age > 60 }) { $0.age < 18 || $0.age > 60 },
            .people("!", #Predicate { !($0.age < 30) }) { !($0.age < 30) },
            .people("&& || mixed", #Predicate { ($0.age > 30 && $0.score > 8) || $0.name == "bob" }) {
                ($0.age > 30 && $0.score > 8) || $0.name == "bob"
            },
            .people("true", #Predicate { _ in true }) { _ in true },
            .people("false", #Predicate { _ in false }) { _ in false },
            // Three-valued logic: a comparison with nil is unknown, and so is its negation.
            .people("3VL: unknown comparison", #Predicate { $0.email! > "m" }) { p in p.email.map { $0 > "m" } ?? false },
            .people("3VL: NOT unknown is unknown", #Predicate { !($0.email! > "m") }) { p in p.email.map { !($0 > "m") } ?? false },
            .people("3VL: NOT NOT unknown", #Predicate { !(!($0.email! > "m")) }) { p in p.email.map { $0 > "m" } ?? false },
            .people("3VL: unknown OR true", #Predicate { $0.email! > "m" || $0.age > 60 }) { p in
                (p.email.map { $0 > "m" } ?? false) || p.age > 60
            },
            .people("3VL: NOT (unknown OR x)", #Predicate { !($0.email! > "m" || $0.age > 60) }) { p in
                guard let e = p.email else { return false }  // NOT (unknown OR false) is unknown; NOT (unknown OR true) false
                return !(e > "m" || p.age > 60)
            },
            .people("3VL: NOT (unknown AND x)", #Predicate { !($0.email! > "m" && $0.age > 60) }) { p in
                guard let e = p.email else { return !(p.age > 60) }  // NOT (unknown AND false) is true
                return !(e > "m" && p.age > 60)
            },
            .people("3VL: NOT unknown date", #Predicate { !($0.createdAt! > cutoff) }) { p in p.createdAt.map { !($0 > cutoff) } ?? false },
            .people("3VL: NOT through nil to-one", #Predicate { !($0.town!.population > 500_000) }) { p in
                p.town.map { !($0.population > 500_000) } ?? false
            }
        ]
    }

    static func optionals() -> [CrossCase] {
        let names: [String?] = ["Paris", nil]
        return [
            .people("attribute == nil", #Predicate { $0.email == nil }) { $0.email == nil },
            .people("attribute != nil", #Predicate { $0.email != nil }) { $0.email != nil },
            .people("!(attribute == nil)", #Predicate { !($0.email == nil) }) { !($0.email == nil) },
            .people("date == nil", #Predicate { $0.createdAt == nil }) { $0.createdAt == nil },
            .people("to-one == nil", #Predicate { $0.town == nil }) { $0.town == nil },
            .people("to-one != nil", #Predicate { $0.town != nil }) { $0.town != nil },
            .people("optional chain ==", #Predicate { $0.town?.name == "Paris" }) { $0.town?.name == "Paris" },
            .people("optional chain != (nil is different)", #Predicate { $0.town?.name != "Paris" }) { $0.town?.name != "Paris" },
            .people("optional chain == nil", #Predicate { $0.town?.name == nil }) { $0.town?.name == nil },
            .people("optional chain through to-one, int", #Predicate { $0.town?.population == nil }) { $0.town?.population == nil },
            .people("forced unwrap through to-one", #Predicate { $0.town!.name == "Lyon" }) { $0.town?.name == "Lyon" },
            .people("forced unwrap through to-one, >", #Predicate { $0.town!.population > 500_000 }) { p in
                p.town.map { $0.population > 500_000 } ?? false
            },
            .people("?? on attribute", #Predicate { ($0.email ?? "none") == "none" }) { ($0.email ?? "none") == "none" },
            .people("?? on chain", #Predicate { ($0.town?.population ?? 0) > 400_000 }) { ($0.town?.population ?? 0) > 400_000 },
            .people("?? on chain, default chosen", #Predicate { ($0.town?.population ?? -1) < 0 }) { ($0.town?.population ?? -1) < 0 },
            .people("flatMap starts(with:) == true", #Predicate { $0.email?.starts(with: "e") == true }) {
                $0.email?.starts(with: "e") == true
            },
            .people("flatMap isEmpty == true", #Predicate { $0.email?.isEmpty == true }) { $0.email?.isEmpty == true },
            .people("flatMap contains == false", #Predicate { $0.email?.contains("@x.") == false }) { p in
                p.email.map { !has($0, "@x.") } == true
            },
            .people("flatMap contains == nil", #Predicate { $0.email?.contains("@x.") == nil }) { $0.email == nil },
            .people("optional test ?? false", #Predicate { $0.email?.contains("a") ?? false }) { $0.email.map { has($0, "a") } ?? false },
            .people("chain then string test", #Predicate { $0.town.flatMap { $0.name.starts(with: "É") } == true }) {
                $0.town?.name.starts(with: "É") == true
            },
            .people("optional in list with nil", #Predicate { names.contains($0.town.flatMap { $0.name }) }) {
                names.contains($0.town?.name)
            },
            .people("ternary on nil check", #Predicate { ($0.town == nil ? "none" : $0.name) == "none" }) {
                ($0.town == nil ? "none" : $0.name) == "none"
            },
            .people("ternary choosing values", #Predicate { ($0.age > 30 ? $0.score : 0.0) > 8 }) { ($0.age > 30 ? $0.score : 0.0) > 8 },
            .people("ternary choosing int", #Predicate { ($0.email == nil ? $0.age : 0) > 30 }) { ($0.email == nil ? $0.age : 0) > 30 },
            .people("ternary with unknown test takes the else branch", #Predicate { ($0.email! > "m" ? 1 : 0) == 0 }) { p in
                (p.email.map { $0 > "m" } == true ? 1 : 0) == 0
            },
            .people("ternary of conditions", #Predicate { $0.age > 30 ? $0.score > 8 : $0.score < 5 }) {
                $0.age > 30 ? $0.score > 8 : $0.score < 5
            }
        ]
    }

    static func strings() -> [CrossCase] {
        let same = ComparisonResult.orderedSame
        let ascending = ComparisonResult.orderedAscending
        let descending = ComparisonResult.orderedDescending
        return [
            .people("contains (case-sensitive)", #Predicate { $0.name.contains("a") }) { has($0.name, "a") },
            .people("contains upper", #Predicate { $0.name.contains("E") }) { has($0.name, "E") },
            .people("contains accent", #Predicate { $0.name.contains("é") }) { has($0.name, "é") },
            .people("contains emoji", #Predicate { $0.name.contains("🎉") }) { has($0.name, "🎉") },
            .people("contains empty", #Predicate { $0.name.contains("") }) { has($0.name, "") },
            .people("contains on forced optional", #Predicate { $0.email!.contains("@x.fr") }) { p in
                p.email.map { has($0, "@x.fr") } ?? false
            },
            .people("contains attribute in attribute", #Predicate { $0.email!.contains($0.name) }) { p in
                p.email.map { has($0, p.name) } ?? false
            },
            .people("starts(with:)", #Predicate { $0.name.starts(with: "É") }) { $0.name.starts(with: "É") },
            .people("starts(with:) lowercase", #Predicate { $0.name.starts(with: "c") }) { $0.name.starts(with: "c") },
            .people("starts(with:) empty", #Predicate { $0.name.starts(with: "") }) { $0.name.starts(with: "") },
            .people("starts(with:) emoji", #Predicate { $0.name.starts(with: "🎉") }) { $0.name.starts(with: "🎉") },
            .people("!starts(with:) on forced optional", #Predicate { !$0.email!.starts(with: "e") }) { p in
                p.email.map { !$0.starts(with: "e") } ?? false
            },
            .people("localizedStandardContains upper", #Predicate { $0.name.localizedStandardContains("EMI") }) {
                has(folded($0.name), folded("EMI"))
            },
            .people("localizedStandardContains accent", #Predicate { $0.name.localizedStandardContains("é") }) {
                has(folded($0.name), folded("é"))
            },
            .people("localizedStandardContains É", #Predicate { $0.name.localizedStandardContains("HÉLÈNE") }) {
                has(folded($0.name), folded("HÉLÈNE"))
            },
            .people("localizedStandardContains chloe", #Predicate { $0.name.localizedStandardContains("chloe") }) {
                has(folded($0.name), "chloe")
            },
            .people("localizedStandardContains ü", #Predicate { $0.name.localizedStandardContains("u") }) { has(folded($0.name), "u") },
            .people("localizedStandardContains emoji", #Predicate { $0.name.localizedStandardContains("🎸") }) { has(folded($0.name), "🎸") },
            .people("localizedStandardContains on optional", #Predicate { $0.email!.localizedStandardContains("X.FR") }) { p in
                p.email.map { has(folded($0), "x.fr") } ?? false
            },
            .people("localizedStandardContains through to-one", #Predicate { $0.town!.name.localizedStandardContains("EV") }) { p in
                p.town.map { has(folded($0.name), "ev") } ?? false
            },
            .people("caseInsensitiveCompare == same", #Predicate { $0.name.caseInsensitiveCompare("helene") == same }) {
                folded($0.name) == "helene"
            },
            .people("caseInsensitiveCompare != same", #Predicate { $0.name.caseInsensitiveCompare("ZOE") != same }) {
                folded($0.name) != "zoe"
            },
            .people("caseInsensitiveCompare == ascending", #Predicate { $0.name.caseInsensitiveCompare("c") == ascending }) {
                folded($0.name) < "c"
            },
            .people("caseInsensitiveCompare == descending", #Predicate { $0.name.caseInsensitiveCompare("m") == descending }) {
                folded($0.name) > "m"
            },
            .people("caseInsensitiveCompare != ascending", #Predicate { $0.name.caseInsensitiveCompare("dora") != ascending }) {
                folded($0.name) >= "dora"
            },
            .people("caseInsensitiveCompare != descending", #Predicate { $0.name.caseInsensitiveCompare("dora") != descending }) {
                folded($0.name) <= "dora"
            },
            .people("caseInsensitiveCompare on forced optional", #Predicate { $0.email!.caseInsensitiveCompare("EVE@X.FR") == same }) { p in
                p.email.map { folded($0) == "eve@x.fr" } ?? false
            },
            .people("caseInsensitiveCompare on ??", #Predicate { ($0.email ?? "").caseInsensitiveCompare("") == same }) {
                ($0.email ?? "") == ""
            },
            .towns("caseInsensitiveCompare on town", #Predicate { $0.name.caseInsensitiveCompare("EVRY") == same }) {
                folded($1.name) == "evry"
            },
            .towns("localizedStandardContains on town", #Predicate { $0.name.localizedStandardContains("zur") }) {
                has(folded($1.name), "zur")
            }
        ]
    }

    static func lists() -> [CrossCase] {
        let names = ["Ada", "Émile", "zoe", "nobody"]
        let ages: Set<Int> = [17, 18, 100]
        let emails: [String?] = ["eve@x.com", nil]
        let onlyNil: [String?] = [nil]
        let none: [String] = []
        let anyOf = ["bob", "Mo"]
        let teens = 13...19
        let from = 60...
        let upTo = ..<18
        let through = ...18
        let lo = CrossData.day(10), hi = CrossData.day(20)
        return [
            .people("IN literal array", #Predicate { [30, 40].contains($0.age) }) { [30, 40].contains($0.age) },
            .people("IN captured array", #Predicate { names.contains($0.name) }) { names.contains($0.name) },
            .people("IN captured set", #Predicate { ages.contains($0.age) }) { ages.contains($0.age) },
            .people("IN with nil", #Predicate { emails.contains($0.email) }) { emails.contains($0.email) },
            .people("NOT IN with nil", #Predicate { !emails.contains($0.email) }) { !emails.contains($0.email) },
            .people("IN only nil, computed operand", #Predicate { onlyNil.contains($0.age > 30 ? $0.email : nil) }) {
                onlyNil.contains($0.age > 30 ? $0.email : nil)
            },
            .people(
                "IN only nil, computed operand, more parameters after",
                #Predicate { onlyNil.contains($0.age > 30 ? $0.email : nil) && $0.name != "bob" }
            ) {
                onlyNil.contains($0.age > 30 ? $0.email : nil) && $0.name != "bob"
            },
            .people("NOT IN without nil (nil is not in the list)", #Predicate { !["eve@x.com", "tom@x.com"].contains($0.email) }) {
                !["eve@x.com", "tom@x.com"].contains($0.email)
            },
            .people("IN empty", #Predicate { none.contains($0.name) }) { none.contains($0.name) },
            .people("NOT IN empty", #Predicate { !none.contains($0.name) }) { !none.contains($0.name) },
            .people("captured contains(where:)", #Predicate { p in anyOf.contains(where: { $0 == p.name }) }) { anyOf.contains($0.name) },
            .people("captured allSatisfy", #Predicate { p in anyOf.allSatisfy { $0 != p.name } }) { !anyOf.contains($0.name) },
            .people("closed range", #Predicate { (30...40).contains($0.age) }) { (30...40).contains($0.age) },
            .people("half-open range", #Predicate { (30..<40).contains($0.age) }) { (30..<40).contains($0.age) },
            .people("NOT range", #Predicate { !(30...40).contains($0.age) }) { !(30...40).contains($0.age) },
            .people("double range", #Predicate { (6.5...8.0).contains($0.score) }) { (6.5...8.0).contains($0.score) },
            .people("string range", #Predicate { ("A"..."C").contains($0.name) }) { ("A"..."C").contains($0.name) },
            .people("captured closed range", #Predicate { teens.contains($0.age) }) { teens.contains($0.age) },
            .people("captured partial range from", #Predicate { from.contains($0.age) }) { from.contains($0.age) },
            .people("captured partial range up to", #Predicate { upTo.contains($0.age) }) { upTo.contains($0.age) },
            .people("captured partial range through", #Predicate { through.contains($0.age) }) { through.contains($0.age) },
            .people("date range with nil (unknown)", #Predicate { (lo...hi).contains($0.createdAt!) }) { p in
                p.createdAt.map { (lo...hi).contains($0) } ?? false
            },
            .people("NOT date range with nil (unknown)", #Predicate { !(lo...hi).contains($0.createdAt!) }) { p in
                p.createdAt.map { !(lo...hi).contains($0) } ?? false
            },
            .people("range through to-one", #Predicate { (100_000...1_000_000).contains($0.town!.population) }) { p in
                p.town.map { (100_000...1_000_000).contains($0.population) } ?? false
            }
        ]
    }

    static func arithmetic() -> [CrossCase] {
        [
            .people("+", #Predicate { $0.age + 5 == 35 }) { $0.age + 5 == 35 },
            .people("-", #Predicate { $0.age - 20 < 0 }) { $0.age - 20 < 0 },
            .people("*", #Predicate { $0.age * 2 > 100 }) { $0.age * 2 > 100 },
            .people("/ integer (truncating)", #Predicate { $0.age / 7 == 5 }) { $0.age / 7 == 5 },
            .people("/ integer negative", #Predicate { $0.age / 2 == 0 }) { $0.age / 2 == 0 },
            .people("%", #Predicate { $0.age % 10 == 0 }) { $0.age % 10 == 0 },
            .people("% negative", #Predicate { $0.age % 3 == -1 }) { $0.age % 3 == -1 },
            .people("unary minus int", #Predicate { -$0.age > -18 }) { -$0.age > -18 },
            .people("unary minus double", #Predicate { -$0.score >= -1 }) { -$0.score >= -1 },
            .people("/ double", #Predicate { $0.score / 2 > 4 }) { $0.score / 2 > 4 },
            .people("* + double", #Predicate { $0.score * 2 + 1 >= 18 }) { $0.score * 2 + 1 >= 18 },
            .people("attribute op attribute", #Predicate { $0.score * 10 > 2.5 * $0.score + 50 }) { $0.score * 10 > 2.5 * $0.score + 50 },
            .people("arithmetic through to-one", #Predicate { $0.town!.population / 1000 - $0.age > 500 }) { p in
                p.town.map { $0.population / 1000 - p.age > 500 } ?? false
            },
            // Division by zero is nil (unknown) in both stores; Swift would trap.
            .people("division by zero attribute", #Predicate { 100 / $0.age > 3 }) { $0.age != 0 && 100 / $0.age > 3 },
            .samples("int16 + int32 widen", #Predicate { $0.i16 * 200 > 1000 }) { Int($0.i16) * 200 > 1000 },
            .samples("integer overflow continues in floating point", #Predicate { $0.i64 * 10_000_000 > 0 }) { Double($0.i64) * 1e7 > 0 },
            .samples("double - double", #Predicate { $0.d - $0.d * 2 < -2 }) { $0.d - $0.d * 2 < -2 }
        ]
    }

    static func toMany() -> [CrossCase] {
        [
            .people("contains(where:)", #Predicate { $0.clubs.contains { $0.title == "Go" } }) { $0.clubs.contains { $0.title == "Go" } },
            .people("contains(where:) string test", #Predicate { $0.clubs.contains { $0.title.starts(with: "B") } }) {
                $0.clubs.contains { $0.title.starts(with: "B") }
            },
            .people("!contains(where:)", #Predicate { !$0.clubs.contains { $0.title == "Chess" } }) {
                !$0.clubs.contains { $0.title == "Chess" }
            },
            .people("allSatisfy (empty is true)", #Predicate { $0.clubs.allSatisfy { $0.title != "Chess" } }) {
                $0.clubs.allSatisfy { $0.title != "Chess" }
            },
            .people("count ==", #Predicate { $0.clubs.count == 2 }) { $0.clubs.count == 2 },
            .people("count >=", #Predicate { $0.clubs.count >= 3 }) { $0.clubs.count >= 3 },
            .people("count < attribute-free", #Predicate { $0.clubs.count < 1 }) { $0.clubs.count < 1 },
            .people("isEmpty", #Predicate { $0.clubs.isEmpty }) { $0.clubs.isEmpty },
            .people("!isEmpty", #Predicate { !$0.clubs.isEmpty }) { !$0.clubs.isEmpty },
            .people(
                "nested contains with to-one path inside",
                #Predicate { $0.clubs.contains { $0.members.contains { $0.town?.name == "Zürich" } } }
            ) { p in
                p.clubMates.contains { $0.contains { $0.town?.name == "Zürich" } }
            },
            .people(
                "nested contains referring to outer object",
                #Predicate { p in p.clubs.contains { c in c.members.contains { m in m.age > p.age + 30 } } }
            ) { p in
                p.clubMates.contains { $0.contains { $0.age > p.age + 30 } }
            },
            .people(
                "nested contains comparing objects and to-ones",
                #Predicate { p in p.clubs.contains { c in c.members.contains { m in m != p && m.town == p.town } } }
            ) { p in
                p.clubMates.contains { $0.contains { $0.name != p.name && $0.townIndex == p.townIndex } }
            },
            .people("to-many through to-one: count", #Predicate { $0.town?.people.count == 3 }) { p in
                p.townIndex.map { t in CrossData.people.filter { $0.townIndex == t }.count == 3 } ?? false
            },
            .people("to-many through to-one: contains", #Predicate { $0.town?.people.contains { $0.age > 60 } == true }) { p in
                p.townIndex.map { t in CrossData.people.contains { $0.townIndex == t && $0.age > 60 } } ?? false
            },
            .people("to-many count through a forced nil to-one is 0", #Predicate { $0.town!.people.count == 0 }) { $0.town == nil },
            .towns("isEmpty (inverse to-many)", #Predicate { $0.people.isEmpty }) { t, _ in !CrossData.people.contains { $0.townIndex == t }
            },
            .towns("count >", #Predicate { $0.people.count > 5 }) { t, _ in CrossData.people.filter { $0.townIndex == t }.count > 5 },
            .towns("allSatisfy incl. empty", #Predicate { $0.people.allSatisfy { $0.age >= 18 } }) { t, _ in
                CrossData.people.filter { $0.townIndex == t }.allSatisfy { $0.age >= 18 }
            },
            .towns("allSatisfy unknown counts as failure", #Predicate { $0.people.allSatisfy { $0.email! > "a" } }) { t, _ in
                CrossData.people.filter { $0.townIndex == t }.allSatisfy { p in p.email.map { $0 > "a" } ?? false }
            },
            .towns("!allSatisfy", #Predicate { !$0.people.allSatisfy { $0.score > 5 } }) { t, _ in
                !CrossData.people.filter { $0.townIndex == t }.allSatisfy { $0.score > 5 }
            },
            .towns("contains nil attribute", #Predicate { $0.people.contains { $0.email == nil } }) { t, _ in
                CrossData.people.contains { $0.townIndex == t && $0.email == nil }
            },
            .towns("nested contains over many-to-many", #Predicate { $0.people.contains { $0.clubs.contains { $0.title == "Go" } } }) {
                t, _ in
                CrossData.people.contains { $0.townIndex == t && $0.clubs.contains { $0.title == "Go" } }
            },
            .towns("objects: every resident's town is this town", #Predicate { t in t.people.allSatisfy { $0.town! == t } }) { _, _ in true
            },
            .clubs("members isEmpty", #Predicate { $0.members.isEmpty }) { $0.isEmpty },
            .clubs("members count >= 10", #Predicate { $0.members.count >= 10 }) { $0.count >= 10 },
            .clubs("members allSatisfy to-one != nil", #Predicate { $0.members.allSatisfy { $0.town != nil } }) {
                $0.allSatisfy { $0.town != nil }
            },
            .clubs("members contains to-one path", #Predicate { $0.members.contains { $0.town?.name == "Oslo" } }) {
                $0.contains { $0.town?.name == "Oslo" }
            },
            .clubs("members contains count through to-one", #Predicate { $0.members.contains { $0.town!.people.count > 6 } }) { members in
                members.contains { m in m.townIndex.map { t in CrossData.people.filter { $0.townIndex == t }.count > 6 } ?? false }
            },
            .clubs("members contains folded", #Predicate { $0.members.contains { $0.name.localizedStandardContains("lea") } }) {
                $0.contains { has(folded($0.name), "lea") }
            }
        ]
    }

    static func inheritance() -> [CrossCase] {
        let shapes = CrossData.shapes
        var circlesOnly = FetchRequest<Circle>()
        circlesOnly.includesSubentities = false
        var abstractOnly = FetchRequest<Shape>()
        abstractOnly.includesSubentities = false
        return [
            .fetch("Shape returns circles and squares", FetchRequest<Shape>(), key: "label", expected: shapes.map(\.label)),
            .fetch(
                "Shape with predicate", FetchRequest<Shape>(predicate: #Predicate { $0.label.starts(with: "c") || $0.label == "s2" }),
                key: "label",
                expected: shapes.filter { $0.label.starts(with: "c") || $0.label == "s2" }.map(\.label)),
            .fetch("Circle only circles", FetchRequest<Circle>(), key: "label", expected: shapes.filter(\.isCircle).map(\.label)),
            .fetch(
                "Circle with subclass attribute", FetchRequest<Circle>(predicate: #Predicate { $0.radius > 2 && $0.label != "" }),
                key: "label",
                expected: shapes.filter { $0.isCircle && $0.size > 2 }.map(\.label)),
            .fetch(
                "Square with inherited attribute", FetchRequest<Square>(predicate: #Predicate { $0.label == "s1" || $0.side > 3 }),
                key: "label",
                expected: ["s1", "s2"]),
            .fetch("Circle includesSubentities = false", circlesOnly, key: "label", expected: shapes.filter(\.isCircle).map(\.label)),
            .fetch("abstract Shape includesSubentities = false", abstractOnly, key: "label", expected: []),
            .sorted(
                "Shape sorted by label reverse, limited",
                FetchRequest<Shape>(sortBy: [SortDescriptor(\.label, order: .reverse)], fetchLimit: 3),
                key: "label", items: shapes, keyOf: \.label
            ) { cmp($1.label, $0.label) }
        ]
    }

    static func sorting() -> [CrossCase] {
        let people = CrossData.people
        return [
            .sorted(
                "sort by name (code points)", FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]), key: "name", items: people,
                keyOf: \.name
            ) {
                cmp($0.name, $1.name)
            },
            .sorted(
                "sort by name, lexical comparator", FetchRequest<Person>(sortBy: [SortDescriptor(\.name, comparator: .lexical)]),
                key: "name",
                items: people, keyOf: \.name
            ) { bytesOrder($0.name, $1.name) },
            .sorted(
                "sort by age reverse, name; limit",
                FetchRequest<Person>(sortBy: [SortDescriptor(\.age, order: .reverse), SortDescriptor(\.name)], fetchLimit: 10),
                key: "name", items: people, keyOf: \.name
            ) { then(cmp($1.age, $0.age), cmp($0.name, $1.name)) },
            .sorted(
                "sort by email (nil first), then name", FetchRequest<Person>(sortBy: [SortDescriptor(\.email), SortDescriptor(\.name)]),
                key: "name", items: people, keyOf: \.name
            ) { then(cmp($0.email, $1.email), cmp($0.name, $1.name)) },
            .sorted(
                "sort by email reverse (nil last)", FetchRequest<Person>(sortBy: [SortDescriptor(\.email, order: .reverse)]),
                key: "name", items: people, keyOf: \.name
            ) { cmp($1.email, $0.email) },
            .sorted(
                "sort through to-one, then age reverse; offset + limit",
                FetchRequest<Person>(
                    sortBy: [SortDescriptor(\.town?.name), SortDescriptor(\.age, order: .reverse)], fetchLimit: 10, fetchOffset: 5),
                key: "name", items: people, keyOf: \.name
            ) { then(cmp($0.town?.name, $1.town?.name), cmp($1.age, $0.age)) },
            .sorted(
                "sort by date reverse; offset + limit",
                FetchRequest<Person>(sortBy: [SortDescriptor(\.createdAt, order: .reverse)], fetchLimit: 7, fetchOffset: 3),
                key: "name", items: people, keyOf: \.name
            ) { cmp($1.createdAt, $0.createdAt) },
            .sorted(
                "predicate + sort by score, name",
                FetchRequest<Person>(predicate: #Predicate { $0.score >= 7 }, sortBy: [SortDescriptor(\.score), SortDescriptor(\.name)]),
                key: "name", items: people, keyOf: \.name, where: { $0.score >= 7 }
            ) { then(cmp($0.score, $1.score), cmp($0.name, $1.name)) },
            .sorted(
                "ties broken by insertion order", FetchRequest<Person>(sortBy: [SortDescriptor(\.score, order: .reverse)]),
                key: "name", items: people, keyOf: \.name
            ) { cmp($1.score, $0.score) },
            .sorted(
                "offset past the end", FetchRequest<Person>(sortBy: [SortDescriptor(\.name)], fetchOffset: 100),
                key: "name", items: people, keyOf: \.name
            ) { cmp($0.name, $1.name) },
            .sorted(
                "limit without sort (insertion order)",
                FetchRequest<Person>(predicate: #Predicate { $0.age > 30 }, fetchLimit: 5, fetchOffset: 2),
                key: "name", items: people, keyOf: \.name, where: { $0.age > 30 }
            ) { _, _ in 0 },
            .sorted(
                "sort by decimal (numeric, nil first)", FetchRequest<Sample>(sortBy: [SortDescriptor(\.decimal)]),
                key: "s", items: CrossData.samples, keyOf: \.s
            ) { cmp($0.decimal, $1.decimal) },
            .sorted(
                "sort by decimal reverse", FetchRequest<Sample>(sortBy: [SortDescriptor(\.decimal, order: .reverse)]),
                key: "s", items: CrossData.samples, keyOf: \.s
            ) { cmp($1.decimal, $0.decimal) },
            .sorted(
                "sort by optional date, then int16 reverse",
                FetchRequest<Sample>(sortBy: [SortDescriptor(\.date), SortDescriptor(\.i16, order: .reverse)]),
                key: "s", items: CrossData.samples, keyOf: \.s
            ) { then(cmp($0.date, $1.date), cmp($1.i16, $0.i16)) },
            .sorted(
                "sort by optional string", FetchRequest<Sample>(sortBy: [SortDescriptor(\.optionalString)]),
                key: "s", items: CrossData.samples, keyOf: \.s
            ) { cmp($0.optionalString, $1.optionalString) },
            .sorted(
                "sort towns by population reverse", FetchRequest<Town>(sortBy: [SortDescriptor(\.population, order: .reverse)]),
                key: "name", items: CrossData.towns, keyOf: \.name
            ) { cmp($1.population, $0.population) }
        ]
    }
}

// MARK: Tests

@Suite("Predicates: SQLite, in-memory and PostgreSQL stores agree")
struct CrossStorePredicateTests {
    @Test(.crossStores, arguments: CrossCases.all)
    func sameAnswer(_ c: CrossCase) throws {
        let stores = try #require(CrossStores.current, "the .crossStores trait provides the stores")
        let sqlite = try c.run(stores.sqlite)
        let memory = try c.run(stores.memory)
        #expect(sqlite.count == sqlite.keys.count, "SQLite count(for:) disagrees with its fetch")
        #expect(memory.count == memory.keys.count, "in-memory count(for:) disagrees with its fetch")
        if c.ordered {
            #expect(sqlite.keys == memory.keys, "SQLite and in-memory stores disagree")
            #expect(memory.keys == c.expected, "stores disagree with the expected answer")
        } else {
            #expect(sqlite.keys.sorted() == memory.keys.sorted(), "SQLite and in-memory stores disagree")
            #expect(memory.keys.sorted() == c.expected.sorted(), "stores disagree with the expected answer")
        }
        if let (store, reference) = stores.postgreSQL {
            try samePostgreSQLAnswer(c, store: store, reference: reference)
        }
    }

    /// Cases that fail on PostgreSQL with a typed error instead of an answer (see ScalingOut.md,
    /// "What differs"): floating-point arithmetic that overflows (PostgreSQL raises an error,
    /// Swift gives an infinity) and integer arithmetic that overflows (SQLite and the evaluator go
    /// on in floating point): `.storeReadFailed` with PostgreSQL's "out of range" (SQLSTATE 22003)
    /// and the SQL.
    static let postgreSQLOverflows: Set<String> = ["integer overflow continues in floating point", "double * 2 > 1", "!(double * 2 > 1)"]

    /// Cases PostgreSQL refuses with `.unsupportedPredicate`: floating-point division by a
    /// divisor that may be zero (Swift gives an infinity or NaN, PostgreSQL raises an error).
    static let postgreSQLRefusals: Set<String> = ["double / 0 > 0", "double / double? is infinite or NaN"]

    /// The PostgreSQL store gives the in-memory store's answer on the same values, or (for a
    /// constant with a NUL character, which PostgreSQL text cannot hold) `.unsupportedPredicate`.
    private func samePostgreSQLAnswer(_ c: CrossCase, store: PersistentStoreCoordinator, reference: PersistentStoreCoordinator) throws {
        if c.name.contains("NUL") {
            let error = #expect(throws: CoherenceError.self) { try c.run(store) }
            #expect(error?.code == .unsupportedPredicate && error?.message.contains("NUL") == true, "\(String(describing: error))")
            return
        }
        let check = {
            let postgreSQL = try c.run(store)
            let expected = try c.run(reference)
            #expect(postgreSQL.count == postgreSQL.keys.count, "PostgreSQL count(for:) disagrees with its fetch")
            if c.ordered {
                #expect(postgreSQL.keys == expected.keys, "PostgreSQL and in-memory stores disagree")
            } else {
                #expect(postgreSQL.keys.sorted() == expected.keys.sorted(), "PostgreSQL and in-memory stores disagree")
            }
        }
        if Self.postgreSQLRefusals.contains(c.name) {
            let error = #expect(throws: CoherenceError.self) { try c.run(store) }
            #expect(error?.code == .unsupportedPredicate, "\(String(describing: error))")
        } else if Self.postgreSQLOverflows.contains(c.name) {
            let error = #expect(throws: CoherenceError.self) { try c.run(store) }
            let postgreSQL = error?.underlyingErrors.lazy.compactMap { $0 as? PostgreSQLError }.first
            #expect(error?.code == .storeReadFailed && postgreSQL?.sqlState == "22003", "\(String(describing: error))")
            #expect(postgreSQL?.sql?.isEmpty == false, "the error carries the SQL")
        } else {
            try check()
        }
    }

    @Test func caseNamesAreUniqueAndDatasetKeysDistinct() {
        let names = CrossCases.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(Set(CrossData.people.map(\.name)).count == CrossData.people.count)
        #expect(Set(CrossData.samples.map(\.s)).count == CrossData.samples.count)
        #expect(Set(CrossData.readings.map(\.label)).count == CrossData.readings.count)
        #expect(Set(CrossData.notes.map(\.key)).count == CrossData.notes.count)
    }

    /// Forms that cannot be translated fail when the request is compiled, before any store is
    /// asked, so both stores report the same `.unsupportedPredicate` error.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func unsupportedFormsFailInBothStores(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let one = Decimal(1)
        let requests: [(String, () throws -> Void)] = [
            ("String.count", { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.name.count > 3 })) }),
            ("regex", { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.name.contains(/A.a/) })) }),
            (
                "computed property",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.shout == "ADA" })) }
            ),
            (
                "to-many first",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.clubs.first?.title == "Go" })) }
            ),
            (
                "to-many filter",
                {
                    _ = try coordinator.fetchObjectIDs(
                        FetchRequest<Person>(predicate: #Predicate { $0.clubs.filter { $0.title == "Go" }.count == 1 }))
                }
            ),
            (
                "sequence max",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { [1, 2].max()! == $0.age })) }
            ),
            (
                "decimal arithmetic",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Sample>(predicate: #Predicate { $0.decimal! + one > one })) }
            ),
            ("type check", { _ = try coordinator.fetchObjectIDs(FetchRequest<Shape>(predicate: #Predicate { $0 is Circle })) }),
            ("Float arithmetic", { _ = try coordinator.fetchObjectIDs(FetchRequest<Sample>(predicate: #Predicate { $0.f * 2 < 1 })) }),
            ("Float division", { _ = try coordinator.fetchObjectIDs(FetchRequest<Sample>(predicate: #Predicate { $0.f / 3 < 1 })) }),
            ("count of unsupported", { _ = try coordinator.count(for: FetchRequest<Person>(predicate: #Predicate { $0.name.count > 3 })) }),
            (
                "dictionaries of unsupported",
                { _ = try coordinator.fetchDictionaries(FetchRequest<Person>(predicate: #Predicate { $0.clubs.first?.title == "Go" })) }
            ),
            (
                "sort on to-many count",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Town>(sortBy: [SortDescriptor(\Town.people.count)])) }
            ),
            (
                "caseInsensitiveCompare inside flatMap",
                {
                    let same = ComparisonResult.orderedSame
                    _ = try coordinator.fetchObjectIDs(
                        FetchRequest<Person>(predicate: #Predicate { $0.email.flatMap { $0.caseInsensitiveCompare("x") } == same }))
                }
            ),
            (
                "caseInsensitiveCompare against a non-constant",
                {
                    let same = ComparisonResult.orderedSame
                    _ = try coordinator.fetchObjectIDs(
                        FetchRequest<Person>(predicate: #Predicate { $0.name.caseInsensitiveCompare("x") == ($0.age > 3 ? same : same) }))
                }
            ),
            (
                "sort on computed property",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.shout)])) }
            ),
            // Computed properties that return a stored property's value unchanged for some values
            // (not all), or that read two: neither is that property.
            (
                "computed property reading two",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.displayName == "Ada" })) }
            ),
            (
                "computed property changing zero",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: #Predicate { $0.ageOrDefault == 18 })) }
            ),
            (
                "key-path builder on computed property",
                {
                    let p: Predicate<Person> = \Person.displayName == "Ada"
                    _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(predicate: p))
                }
            ),
            (
                "sort on computed property reading two",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.displayName)])) }
            ),
            (
                "sort on computed property changing zero",
                { _ = try coordinator.fetchObjectIDs(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.ageOrDefault)])) }
            )
        ]
        for (name, request) in requests {
            do {
                try request()
                Issue.record("\(name): expected .unsupportedPredicate, got a result")
            } catch let error as CoherenceError {
                #expect(error.code == .unsupportedPredicate, "\(name): \(error)")
            } catch {
                Issue.record("\(name): unexpected error \(error)")
            }
        }
    }
}
