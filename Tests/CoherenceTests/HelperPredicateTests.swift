import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Every key-path builder, string form and composition operator, fetched from a SQLite store and
// an in-memory store, against the answer of a plain Swift filter over the data set.

/// A predicate over test subjects and the Swift filter that must give the same answer.
struct SubjectCase {
    let name: String
    let predicate: Predicate<TestSubject>
    let expected: (SubjectSpec) -> Bool

    init(_ name: String, _ predicate: Predicate<TestSubject>, _ expected: @escaping (SubjectSpec) -> Bool) {
        self.name = name
        self.predicate = predicate
        self.expected = expected
    }
}

/// Folds as the string options say, with Foundation (independently of Coherence's folding).
func swiftFold(_ s: String, _ options: StringComparisonOptions) -> String {
    var f: String.CompareOptions = []
    if options.contains(.caseInsensitive) { f.insert(.caseInsensitive) }
    if options.contains(.diacriticInsensitive) { f.insert(.diacriticInsensitive) }
    return s.folding(options: f, locale: nil)
}

/// Whether the whole string matches a regular expression, with Foundation.
func swiftWholeMatch(_ s: String, _ pattern: String, caseInsensitive: Bool) -> Bool {
    guard let regex = try? NSRegularExpression(pattern: "^(?:" + pattern + ")$", options: caseInsensitive ? [.caseInsensitive] : []) else {
        return false
    }
    return regex.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
}

/// The Swift answer of a string test.
func swiftStringTest(_ value: String?, _ test: StringTestOperator, _ pattern: String, _ options: StringComparisonOptions) -> Bool {
    guard let value else { return false }
    let s = swiftFold(value, options), p = swiftFold(pattern, options)
    switch test {
    case .equal: return s == p
    case .contains: return s.contains(p)
    case .beginsWith: return s.hasPrefix(p)
    case .endsWith: return s.hasSuffix(p)
    case .like:
        let regex = p.map { c in c == "?" ? "." : c == "*" ? ".*" : NSRegularExpression.escapedPattern(for: String(c)) }.joined()
        return swiftWholeMatch(s, regex, caseInsensitive: false)
    case .matches:
        let d = options.intersection(.diacriticInsensitive)
        return swiftWholeMatch(swiftFold(value, d), swiftFold(pattern, d), caseInsensitive: options.contains(.caseInsensitive))
    }
}

@Suite("RCDataKit helpers: predicates")
struct HelperPredicateTests {
    /// Fetches with `predicate` in both stores and checks the names against the Swift filter.
    /// Returns the number of expected matches.
    @discardableResult
    func check(_ c: SubjectCase, _ stores: HelperStores, evaluateInSwift: Bool = false) throws -> Int {
        let expected = SchoolData.subjects.filter(c.expected).map(\.name).sorted()
        for (label, context) in stores.both {
            let (got, swift) = try context.performAndWait { () throws -> ([String], [String]) in
                let objects = try context.fetch(FetchRequest<TestSubject>().where(c.predicate))
                var swift: [String] = []
                if evaluateInSwift {
                    for o in try context.fetch(FetchRequest<TestSubject>()) where try c.predicate.evaluate(o) { swift.append(o.name) }
                }
                return (objects.map(\.name).sorted(), swift.sorted())
            }
            #expect(got == expected, "\(c.name) (\(label))")
            if evaluateInSwift { #expect(swift == expected, "\(c.name) evaluated in Swift (\(label))") }
        }
        return expected.count
    }

    @Test func keyPathComparisons() throws {
        let stores = try HelperStores()
        let cutoff = Date(timeIntervalSinceReferenceDate: -600_000_000)
        let cases: [SubjectCase] = [
            SubjectCase("score == 64", \.score == 64, { $0.score == 64 }),
            SubjectCase("score != 64", \.score != 64, { $0.score != 64 }),
            SubjectCase("score < 20", \.score < 20, { $0.score < 20 }),
            SubjectCase("score <= 27", \.score <= 27, { $0.score <= 27 }),
            SubjectCase("score > 50", \.score > 50, { $0.score > 50 }),
            SubjectCase("score >= 64", \.score >= 64, { $0.score >= 64 }),
            SubjectCase("height > 170", \.height > 170.0, { $0.height > 170 }),
            SubjectCase("height <= 160.5", \.height <= 160.5, { $0.height <= 160.5 }),
            SubjectCase("isMale == true", \.isMale == true, { $0.isMale }),
            SubjectCase("isMale != true", \.isMale != true, { !$0.isMale }),
            SubjectCase("name == Jürgen", \.name == "Jürgen", { $0.name == "Jürgen" }),
            SubjectCase("name > M", \.name > "M", { ByteString(bytes: Array($0.name.utf8)) > ByteString(bytes: Array("M".utf8)) }),
            SubjectCase("nickname == nil", \.nickname == nil, { $0.nickname == nil }),
            SubjectCase("nickname != nil", \.nickname != nil, { $0.nickname != nil }),
            SubjectCase("nickname == jürgen", \.nickname == "jürgen", { $0.nickname == "jürgen" }),
            SubjectCase("nickname != jürgen (nil matches)", \.nickname != "jürgen", { $0.nickname != "jürgen" }),
            SubjectCase("dateOfBirth == nil", \.dateOfBirth == nil, { $0.dateOfBirth == nil }),
            SubjectCase("dateOfBirth < cutoff (optional)", \.dateOfBirth < cutoff, { $0.dateOfBirth.map { $0 < cutoff } ?? false }),
            SubjectCase("dateOfBirth >= cutoff (optional)", \.dateOfBirth >= cutoff, { $0.dateOfBirth.map { $0 >= cutoff } ?? false }),
            SubjectCase("weight > 80 (optional)", \.weight > 80.0, { $0.weight.map { $0 > 80 } ?? false }),
            SubjectCase("weight <= 60 (optional)", \.weight <= 60.0, { $0.weight.map { $0 <= 60 } ?? false }),
            SubjectCase("score between 10...50", .between(\.score, 10...50), { (10...50).contains($0.score) }),
            SubjectCase("height between 160...175", .between(\.height, 160...175), { (160...175).contains($0.height) }),
            SubjectCase(
                "weight between 60...80 (optional)", .between(\.weight, 60...80), { $0.weight.map { (60...80).contains($0) } ?? false }),
            SubjectCase(
                "dateOfBirth between (optional)", .between(\.dateOfBirth, cutoff...Date(timeIntervalSinceReferenceDate: 0)),
                {
                    $0.dateOfBirth.map { (cutoff...Date(timeIntervalSinceReferenceDate: 0)).contains($0) } ?? false
                }),
            SubjectCase("score in [..]", .in(\.score, [-10, 27, 64, 1000]), { [-10, 27, 64, 1000].contains($0.score) }),
            SubjectCase("name in [..]", .in(\.name, Set(["Zoë", "Zoe", "Nobody"])), { ["Zoë", "Zoe"].contains($0.name) }),
            SubjectCase("nickname in [..] (optional)", .in(\.nickname, ["zoë", "nick Zoe"]), { ["zoë", "nick Zoe"].contains($0.nickname) }),
            SubjectCase("nickname in [nil, ..]", .in(\.nickname, [nil, "zoë"]), { $0.nickname == nil || $0.nickname == "zoë" })
        ]
        for c in cases {
            let count = try check(c, stores)
            #expect(count > 0 && count < SchoolData.subjects.count, "\(c.name) should select some but not all rows")
        }
    }

    @Test func stringFormsWithOptions() throws {
        let stores = try HelperStores()
        let patterns: [(StringTestOperator, [String])] = [
            (.equal, ["jurgen", "Jürgen", "MÜLLER"]),
            (.contains, ["ü", "U", "oe"]),
            (.beginsWith, ["jü", "Ö", "a"]),
            (.endsWith, ["LER", "e", "ë"]),
            (.like, ["J?rg*", "*ë*", "m?ller", "*O*"]),
            (.matches, ["[jJ][uü]r.*", "ö.*", "(a|ä).*e.*", "[A-Z][a-z]+"])
        ]
        let optionSets: [StringComparisonOptions] = [[], .caseInsensitive, .diacriticInsensitive, .caseAndDiacriticInsensitive]
        var cases = 0, nonEmpty = 0
        var answers: [String: Set<Int>] = [:]
        for (test, values) in patterns {
            for value in values {
                for options in optionSets {
                    let byName: Predicate<TestSubject>
                    let byNickname: Predicate<TestSubject>
                    switch test {
                    case .equal:
                        (byName, byNickname) = (
                            .equal(\.name, to: value, options: options), .equal(\.nickname, to: value, options: options)
                        )
                    case .contains:
                        (byName, byNickname) = (.contains(\.name, value, options: options), .contains(\.nickname, value, options: options))
                    case .beginsWith:
                        (byName, byNickname) = (
                            .beginsWith(\.name, value, options: options), .beginsWith(\.nickname, value, options: options)
                        )
                    case .endsWith:
                        (byName, byNickname) = (.endsWith(\.name, value, options: options), .endsWith(\.nickname, value, options: options))
                    case .like: (byName, byNickname) = (.like(\.name, value, options: options), .like(\.nickname, value, options: options))
                    case .matches:
                        (byName, byNickname) = (.matches(\.name, value, options: options), .matches(\.nickname, value, options: options))
                    }
                    let label = "\(test) '\(value)' \(options.rawValue)"
                    let n = try check(
                        SubjectCase("name " + label, byName, { swiftStringTest($0.name, test, value, options) }), stores,
                        evaluateInSwift: true)
                    try check(
                        SubjectCase("nickname " + label, byNickname, { swiftStringTest($0.nickname, test, value, options) }), stores,
                        evaluateInSwift: true)
                    cases += 1
                    if n > 0 { nonEmpty += 1 }
                    answers["\(test) \(value)", default: []].insert(n)
                }
            }
        }
        // The data set exercises the forms: most select something, and the options change answers.
        #expect(nonEmpty * 4 > cases * 3)
        #expect(answers.values.filter { $0.count > 1 }.count * 2 > answers.count)
    }

    @Test func notEqualIsTheNegationOfEqual() throws {
        let stores = try HelperStores()
        for options: StringComparisonOptions in [[], .caseAndDiacriticInsensitive] {
            let n = try check(
                SubjectCase(
                    "nickname notEqual jurgen \(options.rawValue)", .notEqual(\.nickname, to: "jurgen", options: options),
                    { !swiftStringTest($0.nickname, .equal, "jurgen", options) }), stores, evaluateInSwift: true)
            // nil nicknames match a notEqual.
            #expect(n > SchoolData.subjects.filter { $0.nickname == nil }.count)
        }
    }

    @Test func composition() throws {
        let stores = try HelperStores()
        let a: Predicate<TestSubject> = \.score > 20
        let b: Predicate<TestSubject> = .contains(\.name, "ü", options: .caseInsensitive)
        let c: Predicate<TestSubject> = #Predicate { $0.dateOfBirth == nil }
        let ea: (SubjectSpec) -> Bool = { $0.score > 20 }
        let eb: (SubjectSpec) -> Bool = { swiftStringTest($0.name, .contains, "ü", .caseInsensitive) }
        let ec: (SubjectSpec) -> Bool = { $0.dateOfBirth == nil }
        // The tree `#Predicate { a.evaluate($0) && b.evaluate($0) }` expands to on Apple platforms.
        let macroShaped = Predicate<TestSubject> {
            PredicateExpressions.Conjunction(
                lhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(a), $0),
                rhs: PredicateExpressions.build_evaluate(PredicateExpressions.Value(b), $0))
        }
        let cases: [SubjectCase] = [
            SubjectCase("a && b", a && b, { ea($0) && eb($0) }),
            SubjectCase("a || b", a || b, { ea($0) || eb($0) }),
            SubjectCase("!a", !a, { !ea($0) }),
            SubjectCase("!(a && b)", !(a && b), { !(ea($0) && eb($0)) }),
            SubjectCase("(a && !b) || c", (a && !b) || c, { (ea($0) && !eb($0)) || ec($0) }),
            SubjectCase("joined and", [a, b, c].joined(with: .and), { ea($0) && eb($0) && ec($0) }),
            SubjectCase("joined or", [a, b, c].joined(with: .or), { ea($0) || eb($0) || ec($0) }),
            SubjectCase("macro-shaped nested evaluate", macroShaped, { ea($0) && eb($0) }),
            SubjectCase("#Predicate && builder", #Predicate<TestSubject> { $0.isMale } && b, { $0.isMale && eb($0) }),
            SubjectCase("nested composition", !(!(a || c)) && (b || !b), { ea($0) || ec($0) })
        ]
        for c in cases { try check(c, stores, evaluateInSwift: true) }
        // Empty joins: every object and none.
        #expect(try check(SubjectCase("empty and", [Predicate<TestSubject>]().joined(with: .and), { _ in true }), stores) == 50)
        #expect(try check(SubjectCase("empty or", [Predicate<TestSubject>]().joined(with: .or), { _ in false }), stores) == 0)
    }

    @Test func relationshipsComparedByObjectID() throws {
        let stores = try HelperStores()
        for (label, context) in stores.both {
            try context.performAndWait { () throws in
                let schools = try context.fetch(FetchRequest<School>())
                func school(_ id: String) throws -> School { try #require(schools.first { $0.id == id }) }
                let hogwarts = try school("hogwarts")
                let students = try context.fetch(FetchRequest<Student>())
                let harry = try #require(students.first { $0.id == 1 })
                let snape = try #require(try context.fetch(FetchRequest<SchoolTeacher>().where(\.id == 2)).first)
                func ids(_ p: Predicate<Student>) throws -> [Int] { try context.fetch(FetchRequest<Student>().where(p)).map(\.id).sorted() }
                func specIDs(_ f: (StudentSpec) -> Bool) -> [Int] { SchoolData.students.filter(f).map(\.id).sorted() }

                #expect(try ids(\.school == hogwarts) == specIDs { $0.school == 0 }, "\(label)")
                #expect(try ids(\.school == nil) == specIDs { $0.school == nil }, "\(label)")
                #expect(try ids(\.school != hogwarts) == specIDs { $0.school != 0 }, "\(label)")
                #expect(try ids(\.school != nil) == specIDs { $0.school != nil }, "\(label)")
                #expect(
                    try ids(\.school == hogwarts && .beginsWith(\.firstName, "H"))
                        == specIDs { $0.school == 0 && $0.firstName.hasPrefix("H") },
                    "\(label)")
                // Key paths through to-one relationships.
                #expect(try ids(\.school?.name == "Hogwarts") == specIDs { $0.school == 0 }, "\(label)")
                #expect(try ids(\.school?.name != "Hogwarts") == specIDs { $0.school != 0 }, "\(label)")
                #expect(
                    try ids(.contains(\.school?.name, "B", options: .caseAndDiacriticInsensitive))
                        == specIDs { s in s.school.map { SchoolData.schools[$0].name.lowercased().contains("b") } ?? false }, "\(label)")
                #expect(
                    try ids(.in(\.school?.teacher?.id, [2]))
                        == specIDs { s in s.school.map { SchoolData.schools[$0].teacher == 1 } ?? false },
                    "\(label)")
                let withHarry = try context.fetch(FetchRequest<School>().where(.contains(\.students, harry))).map(\.id)
                #expect(withHarry == ["hogwarts"], "\(label)")
                let snapes = try context.fetch(FetchRequest<School>().where(\.teacher == snape)).map(\.id).sorted()
                #expect(snapes == ["beauxbatons", "durmstrang"], "\(label)")
                // A nested predicate bound to the destinations of a to-many relationship.
                let delacour: Predicate<Student> = .equal(\.lastName, to: "delacour", options: .caseInsensitive)
                let nested = Predicate<School> {
                    PredicateExpressions.SequenceContainsWhere(PredicateExpressions.KeyPath(root: $0, keyPath: \School.students)) {
                        PredicateExpressions.build_evaluate(PredicateExpressions.Value(delacour), $0)
                    }
                }
                #expect(try context.fetch(FetchRequest<School>().where(nested)).map(\.id) == ["beauxbatons"], "\(label)")
                // Evaluated in Swift, the relationship tests give the fetch's answers.
                #expect(try (\Student.school == hogwarts).evaluate(harry))
                #expect(try Predicate<School>.contains(\.students, harry).evaluate(hogwarts))
                #expect(try !(Predicate<School>.contains(\.students, harry).evaluate(try school("durmstrang"))))
            }
        }
    }

    @Test func untranslatablePartsAreTypedErrors() throws {
        let stores = try HelperStores()
        let regex: Predicate<TestSubject> = #Predicate { $0.name.contains(/A.a/) }
        let notAnObject = Predicate<TestSubject> {
            PredicateExpressions.ObjectIdentity(root: PredicateExpressions.KeyPath(root: $0, keyPath: \TestSubject.name), objectIDs: [nil])
        }
        let cases: [(Predicate<TestSubject>, String)] = [
            (.matches(\.name, "([a-z"), "'([a-z' is not a valid regular expression"),
            (\.displayName == "Zoë!", "PredicateExpressions.ModelKeyPath"),
            (\.name.utf8.count == 3, "PredicateExpressions.ModelKeyPath"),
            (\.score > 3 && regex, "StringContainsRegex"),
            (!(!regex), "StringContainsRegex"),
            (notAnObject, "PredicateExpressions.ObjectIdentity")
        ]
        // A key path through a to-one relationship to another relationship is not an attribute.
        let teacherOfSchool: Predicate<Student> = \.school?.teacher == nil
        for (label, context) in stores.both {
            let error = #expect(throws: CoherenceError.self, "\(label)") {
                try context.performAndWait { () throws in _ = try context.fetch(FetchRequest<Student>().where(teacherOfSchool)) }
            }
            #expect(error?.message.contains("ModelKeyPath") == true)
            #expect(error?.message.contains("school") == true)
        }
        for (label, context) in stores.both {
            for (predicate, named) in cases {
                let error = #expect(throws: CoherenceError.self, "\(named) (\(label))") {
                    try context.performAndWait { () throws in _ = try context.fetch(FetchRequest<TestSubject>().where(predicate)) }
                }
                #expect(error?.code == .unsupportedPredicate)
                #expect(error?.message.contains(named) == true, "\(error?.message ?? "") names \(named)")
                #expect(error?.entityName == "TestSubject")
            }
        }
    }

    @Test func chainingSortsAndIDOnlyRequests() throws {
        let stores = try HelperStores()
        let specs = SchoolData.subjects
        func order(_ areInIncreasingOrder: (SubjectSpec, SubjectSpec) -> Bool?) -> [String] {
            specs.enumerated().sorted { x, y in areInIncreasingOrder(x.element, y.element) ?? (x.offset < y.offset) }.map(\.element.name)
        }
        func compare<V: Comparable>(_ a: V?, _ b: V?, ascending: Bool) -> Bool? {
            switch (a, b) {
            case (nil, nil): return nil
            case (nil, _): return ascending
            case (_, nil): return !ascending
            case let (x?, y?): return x == y ? nil : (ascending ? x < y : x > y)
            }
        }
        func utf8(_ s: String?) -> [UInt8]? { s.map { Array($0.utf8) } }
        let sorts: [(String, [SortDescriptor<TestSubject>], [String])] = [
            ("height ascending", [.ascending(\.height)], order { compare($0.height, $1.height, ascending: true) }),
            ("height descending", [.descending(\.height)], order { compare($0.height, $1.height, ascending: false) }),
            (
                "dateOfBirth descending (nil last)", [.descending(\.dateOfBirth)],
                order { compare($0.dateOfBirth, $1.dateOfBirth, ascending: false) }
            ),
            (
                "dateOfBirth ascending (nil first)", [.ascending(\.dateOfBirth)],
                order { compare($0.dateOfBirth, $1.dateOfBirth, ascending: true) }
            ),
            (
                "nickname by code points, then score", [.ascending(\.nickname), .descending(\.score)],
                order {
                    let a = utf8($0.nickname).map { ByteString(bytes: $0) }, b = utf8($1.nickname).map { ByteString(bytes: $0) }
                    return compare(a, b, ascending: true) ?? compare($0.score, $1.score, ascending: false)
                }
            )
        ]
        for (label, context) in stores.both {
            try context.performAndWait { () throws in
                for (name, descriptors, expected) in sorts {
                    let names = try context.fetch(FetchRequest<TestSubject>().sorted([.ascending(\.name)]).sorted(descriptors)).map(\.name)
                    #expect(names == expected, "\(name) (\(label))")
                }
                // `where` replaces the predicate.
                let replaced = try context.fetch(FetchRequest<TestSubject>().where(\.score > 1000).where(\.isMale == true))
                #expect(Set(replaced.map(\.name)) == Set(specs.filter(\.isMale).map(\.name)), "\(label)")
                // ID-only requests: the same objects in the same order, without loading them.
                let request = ObjectIDFetchRequest<TestSubject>().where(\.score > 20).sorted([.descending(\.score), .ascending(\.name)])
                let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
                let ids = try fresh.performAndWait { () throws in
                    let ids = try fresh.fetch(request)
                    #expect(fresh.registeredObjects.isEmpty, "\(label)")
                    return ids
                }
                let objects = try context.fetch(request.request).map(\.name)
                #expect(try ids.map { try context.existingObject(with: $0).name } == objects, "\(label)")
                #expect(objects.count == specs.filter { $0.score > 20 }.count, "\(label)")
            }
        }
    }
}

/// UTF-8 bytes compared lexicographically (code-point order).
struct ByteString: Comparable {
    let bytes: [UInt8]
    static func < (a: ByteString, b: ByteString) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}
