import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// MARK: In-memory rows

/// A row for the evaluator: values by slot, to-one and to-many destinations by name.
final class TestRow: QueryRow {
    static let store = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
    let queryEntity: EntityDescription
    let queryObjectID: ObjectID
    var values: [StoredValue]
    var toOne: [String: TestRow] = [:]
    var toMany: [String: [TestRow]] = [:]

    init(_ entity: EntityDescription, _ key: Int64, _ attributes: [String: StoredValue]) throws {
        queryEntity = entity
        queryObjectID = ObjectID(entity: entity, storeIdentifier: Self.store, primaryKey: key)
        values = entity.properties.map { ($0 as? AttributeDescription)?.defaultValue ?? .null }
        for (name, value) in attributes {
            let attribute = try #require(entity.attributesByName[name], "no attribute \(name)")
            values[attribute.slot] = value
        }
    }

    func queryValue(at slot: Int) -> StoredValue { values[slot] }
    func queryToOne(_ relationship: RelationshipDescription) -> (any QueryRow)? { toOne[relationship.name] }
    func queryToMany(_ relationship: RelationshipDescription) -> [any QueryRow] { toMany[relationship.name] ?? [] }

    var name: String {
        for key in ["name", "title", "s"] {
            if let a = queryEntity.attributesByName[key], case .text(let t) = values[a.slot] { return t }
        }
        return "#\(queryObjectID.primaryKey)"
    }
}

/// People, towns and clubs:
///
/// | person | age | score | email | town | clubs |
/// |---|---|---|---|---|---|
/// | Ada | 36 | 9.5 | ada@example.com | Paris | Chess |
/// | Bob | 30 | 7 | nil | Lyon | Chess, Go |
/// | Émile | 40 | 8 | emile@x.fr | nil | |
/// | zoe | 25 | 6.5 | Zoe@Example.com | Paris | Go |
struct Fixture {
    let model: ManagedObjectModel
    let person: EntityDescription
    let town: EntityDescription
    let club: EntityDescription
    let people: [TestRow]
    let towns: [TestRow]
    let clubs: [TestRow]

    init() throws {
        model = try makeTestModel()
        person = try #require(model.entity(for: Person.self))
        town = try #require(model.entity(for: Town.self))
        club = try #require(model.entity(for: Club.self))
        let paris = try TestRow(town, 1, ["name": .text("Paris"), "population": .integer(2_100_000)])
        let lyon = try TestRow(town, 2, ["name": .text("Lyon"), "population": .integer(520_000)])
        let ada = try TestRow(
            person, 1, ["name": .text("Ada"), "age": .integer(36), "score": .real(9.5), "email": .text("ada@example.com")])
        let bob = try TestRow(person, 2, ["name": .text("Bob"), "age": .integer(30), "score": .real(7), "email": .null])
        let emile = try TestRow(person, 3, ["name": .text("Émile"), "age": .integer(40), "score": .real(8), "email": .text("emile@x.fr")])
        let zoe = try TestRow(
            person, 4, ["name": .text("zoe"), "age": .integer(25), "score": .real(6.5), "email": .text("Zoe@Example.com")])
        let chess = try TestRow(club, 1, ["title": .text("Chess")])
        let go = try TestRow(club, 2, ["title": .text("Go")])
        ada.toOne["town"] = paris
        bob.toOne["town"] = lyon
        zoe.toOne["town"] = paris
        paris.toMany["people"] = [ada, zoe]
        lyon.toMany["people"] = [bob]
        ada.toMany["clubs"] = [chess]
        bob.toMany["clubs"] = [chess, go]
        zoe.toMany["clubs"] = [go]
        chess.toMany["members"] = [ada, bob]
        go.toMany["members"] = [bob, zoe]
        people = [ada, bob, emile, zoe]
        towns = [paris, lyon]
        clubs = [chess, go]
    }

    /// The IR of a predicate over people.
    func ir(_ predicate: Predicate<Person>) throws -> QueryExpression {
        try PredicateCompiler.compile(predicate, entity: person)
    }

    /// The names of the people matching a predicate, in fixture order.
    func people(_ predicate: Predicate<Person>) throws -> [String] {
        let e = try ir(predicate)
        return people.filter { QueryEvaluator.matches(e, row: $0) }.map(\.name)
    }

    /// The names of the towns matching a predicate.
    func towns(_ predicate: Predicate<Town>) throws -> [String] {
        let e = try PredicateCompiler.compile(predicate, entity: town)
        return towns.filter { QueryEvaluator.matches(e, row: $0) }.map(\.name)
    }

    /// A captured managed object standing for a row.
    func object<T: ManagedObject>(_ type: T.Type, for row: TestRow) -> T {
        let object = T(entity: row.queryEntity)
        object._objectID = row.queryObjectID
        return object
    }
}

/// The message of the `.unsupportedPredicate` error `body` throws (nil if it throws none).
func unsupportedMessage(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let error as CoherenceError {
        #expect(error.code == .unsupportedPredicate)
        return error.message
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

// MARK: Tests

@Suite("Predicate compiler and evaluator")
struct PredicateCompilerTests {
    @Test func equalityAndOrdering() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { $0.name == "Ada" })
        #expect(e.description == "($0.name == \"Ada\")")
        #expect(try f.people(#Predicate<Person> { $0.name == "Ada" }) == ["Ada"])
        #expect(try f.people(#Predicate<Person> { $0.name != "Ada" }) == ["Bob", "Émile", "zoe"])
        #expect(try f.people(#Predicate<Person> { $0.age >= 36 }) == ["Ada", "Émile"])
        #expect(try f.people(#Predicate<Person> { $0.age < 30 }) == ["zoe"])
        #expect(try f.people(#Predicate<Person> { $0.score <= 7 }) == ["Bob", "zoe"])
        #expect(try f.people(#Predicate<Person> { $0.score > 8 }) == ["Ada"])
        // Text compares by UTF-8 bytes: uppercase before lowercase, "É" after ASCII.
        #expect(try f.people(#Predicate<Person> { $0.name > "Z" }) == ["Émile", "zoe"])
    }

    @Test func logic() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { $0.age > 26 && $0.age < 40 })
        guard case .and(let parts) = e else { Issue.record("expected AND, got \(e)"); return }
        #expect(parts.count == 2)
        #expect(try f.people(#Predicate<Person> { $0.age > 26 && $0.age < 40 }) == ["Ada", "Bob"])
        #expect(try f.people(#Predicate<Person> { $0.age < 26 || $0.age > 39 }) == ["Émile", "zoe"])
        #expect(try f.people(#Predicate<Person> { !($0.age < 36) }) == ["Ada", "Émile"])
        #expect(try f.people(#Predicate<Person> { _ in true }).count == 4)
        #expect(try f.people(#Predicate<Person> { _ in false }).isEmpty)
    }

    @Test func threeValuedLogic() throws {
        let f = try Fixture()
        // Bob's email is nil: the comparison is unknown, and so is its negation.
        #expect(try f.people(#Predicate<Person> { !($0.email! > "b") }) == ["Ada", "zoe"])
        #expect(try f.people(#Predicate<Person> { $0.email! > "b" }) == ["Émile"])
        // == is null-safe.
        #expect(try f.people(#Predicate<Person> { $0.email != "ada@example.com" }) == ["Bob", "Émile", "zoe"])
    }

    @Test func nilChecks() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { $0.email == nil })
        #expect(e.description == "($0.email IS NULL)")
        #expect(try f.people(#Predicate<Person> { $0.email == nil }) == ["Bob"])
        #expect(try f.people(#Predicate<Person> { $0.email != nil }) == ["Ada", "Émile", "zoe"])
        let t = try f.ir(#Predicate<Person> { $0.town == nil })
        #expect(t.description == "($0.town IS NULL)")
        #expect(try f.people(#Predicate<Person> { $0.town == nil }) == ["Émile"])
        #expect(try f.people(#Predicate<Person> { $0.town != nil }) == ["Ada", "Bob", "zoe"])
    }

    @Test func optionalsAndToOnePaths() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { $0.town?.name == "Paris" })
        #expect(e.description == "($0.town.name == \"Paris\")")
        #expect(try f.people(#Predicate<Person> { $0.town?.name == "Paris" }) == ["Ada", "zoe"])
        #expect(try f.people(#Predicate<Person> { $0.town!.name == "Lyon" }) == ["Bob"])
        #expect(try f.people(#Predicate<Person> { ($0.email ?? "none") == "none" }) == ["Bob"])
        #expect(try f.people(#Predicate<Person> { ($0.town?.population ?? 0) > 1_000_000 }) == ["Ada", "zoe"])
        // A flatMap over a value is nil when the value is.
        let s = try f.ir(#Predicate<Person> { $0.email?.starts(with: "ada") == true })
        guard case .compare(.equal, .conditional(.isNull, _, _), _) = s else { Issue.record("got \(s)"); return }
        #expect(try f.people(#Predicate<Person> { $0.email?.starts(with: "ada") == true }) == ["Ada"])
        #expect(try f.people(#Predicate<Person> { $0.email?.starts(with: "ada") == nil }) == ["Bob"])
    }

    @Test func strings() throws {
        let f = try Fixture()
        let c = try f.ir(#Predicate<Person> { $0.name.contains("o") })
        #expect(c.description == "contains($0.name, \"o\")")
        #expect(try f.people(#Predicate<Person> { $0.name.contains("o") }) == ["Bob", "zoe"])
        #expect(try f.people(#Predicate<Person> { $0.name.contains("O") }).isEmpty)
        let s = try f.ir(#Predicate<Person> { $0.name.starts(with: "A") })
        #expect(s.description == "beginsWith($0.name, \"A\")")
        #expect(try f.people(#Predicate<Person> { $0.name.starts(with: "A") }) == ["Ada"])
        #expect(try f.people(#Predicate<Person> { $0.email?.isEmpty == false }) == ["Ada", "Émile", "zoe"])
    }

    @Test func foldedStrings() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { $0.name.localizedStandardContains("EMI") })
        #expect(e.description == "contains(fold($0.name), fold(\"EMI\"))")
        #expect(try f.people(#Predicate<Person> { $0.name.localizedStandardContains("EMI") }) == ["Émile"])
        #expect(try f.people(#Predicate<Person> { $0.name.localizedStandardContains("O") }) == ["Bob", "zoe"])
        let same = ComparisonResult.orderedSame
        let ascending = ComparisonResult.orderedAscending
        let descending = ComparisonResult.orderedDescending
        let cmp = try f.ir(#Predicate<Person> { $0.name.caseInsensitiveCompare("ADA") == same })
        #expect(cmp.description == "(fold($0.name) == fold(\"ADA\"))")
        #expect(try f.people(#Predicate<Person> { $0.name.caseInsensitiveCompare("ADA") == same }) == ["Ada"])
        #expect(try f.people(#Predicate<Person> { $0.name.caseInsensitiveCompare("EMILE") == same }) == ["Émile"])
        #expect(try f.people(#Predicate<Person> { $0.name.caseInsensitiveCompare("c") == ascending }) == ["Ada", "Bob"])
        #expect(try f.people(#Predicate<Person> { $0.name.caseInsensitiveCompare("c") == descending }) == ["Émile", "zoe"])
        #expect(try f.people(#Predicate<Person> { $0.name.caseInsensitiveCompare("ada") != same }) == ["Bob", "Émile", "zoe"])
    }

    @Test func foldedStringExpressionsEvaluateInSwift() throws {
        let contains = #Predicate<String> { $0.localizedStandardContains("EMI") }
        #expect(try contains.evaluate("Émile"))
        #expect(try !contains.evaluate("Bob"))
        let same = ComparisonResult.orderedSame
        let compare = #Predicate<String> { $0.caseInsensitiveCompare("éMILE") == same }
        #expect(try compare.evaluate("Emile"))
        #expect(try !compare.evaluate("Emil"))
        let data = try JSONEncoder().encode(
            PredicateExpressions.StringLocalizedStandardContains(
                root: PredicateExpressions.Value("a"), other: PredicateExpressions.Value("b")))
        #expect(!data.isEmpty)
    }

    @Test func inList() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { [30, 40].contains($0.age) })
        #expect(e.description == "($0.age IN [30, 40])")
        #expect(try f.people(#Predicate<Person> { [30, 40].contains($0.age) }) == ["Bob", "Émile"])
        let names = ["Ada", "zoe", "Nobody"]
        #expect(try f.people(#Predicate<Person> { names.contains($0.name) }) == ["Ada", "zoe"])
        let ages: Set<Int> = [25]
        #expect(try f.people(#Predicate<Person> { ages.contains($0.age) }) == ["zoe"])
        let none: [String] = []
        #expect(try f.people(#Predicate<Person> { none.contains($0.name) }).isEmpty)
        let anyOf = ["Bob", "zoe"]
        #expect(try f.people(#Predicate<Person> { p in anyOf.contains(where: { $0 == p.name }) }) == ["Bob", "zoe"])
    }

    @Test func ranges() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { (30...40).contains($0.age) })
        #expect(e.description == "($0.age BETWEEN 30 AND 40)")
        #expect(try f.people(#Predicate<Person> { (30...40).contains($0.age) }) == ["Ada", "Bob", "Émile"])
        let x = try f.ir(#Predicate<Person> { (30..<40).contains($0.age) })
        guard case .between(_, _, _, upperInclusive: false) = x else { Issue.record("got \(x)"); return }
        #expect(try f.people(#Predicate<Person> { (30..<40).contains($0.age) }) == ["Ada", "Bob"])
        let captured = 25...30
        #expect(try f.people(#Predicate<Person> { captured.contains($0.age) }) == ["Bob", "zoe"])
        let from = 36...
        #expect(try f.people(#Predicate<Person> { from.contains($0.age) }) == ["Ada", "Émile"])
    }

    @Test func arithmetic() throws {
        let f = try Fixture()
        #expect(try f.people(#Predicate<Person> { $0.age * 2 > 70 }) == ["Ada", "Émile"])
        #expect(try f.people(#Predicate<Person> { $0.age + 5 == 35 }) == ["Bob"])
        #expect(try f.people(#Predicate<Person> { $0.age - 5 == 20 }) == ["zoe"])
        let d = try f.ir(#Predicate<Person> { $0.age / 7 == 5 })
        #expect(d.description == "(($0.age / 7) == 5)")
        #expect(try f.people(#Predicate<Person> { $0.age / 7 == 5 }) == ["Ada", "Émile"])
        #expect(try f.people(#Predicate<Person> { $0.age % 10 == 0 }) == ["Bob", "Émile"])
        let r = try f.ir(#Predicate<Person> { $0.score / 2 > 4 })
        #expect(r.description == "(($0.score /. 2.0) > 4.0)")
        #expect(try f.people(#Predicate<Person> { $0.score / 2 > 4 }) == ["Ada"])
        #expect(try f.people(#Predicate<Person> { -$0.age < -35 }) == ["Ada", "Émile"])
    }

    @Test func evaluatorArithmetic() throws {
        let f = try Fixture()
        let ada = f.people[0]
        func v(_ e: QueryExpression) -> StoredValue { QueryEvaluator.value(e, row: ada) }
        let i = { (x: Int64) in QueryExpression.constant(.integer(x)) }
        #expect(v(.arithmetic(.add, i(2), i(3))) == .integer(5))
        #expect(v(.arithmetic(.divide, i(7), i(2))) == .integer(3))
        #expect(v(.arithmetic(.divide, i(-7), i(2))) == .integer(-3))
        #expect(v(.arithmetic(.realDivide, i(7), i(2))) == .real(3.5))
        #expect(v(.arithmetic(.divide, i(7), i(0))) == .null)
        // Floating-point division by zero is an infinity (or NaN), as Swift's `/` on Double.
        #expect(v(.arithmetic(.realDivide, i(7), i(0))) == .real(.infinity))
        #expect(v(.arithmetic(.realDivide, i(0), i(0))).doubleValue?.isNaN == true)
        #expect(v(.arithmetic(.remainder, i(7), i(0))) == .null)
        #expect(v(.arithmetic(.remainder, i(-7), i(3))) == .integer(-1))
        #expect(v(.arithmetic(.multiply, i(2), .constant(.real(1.5)))) == .real(3))
        #expect(v(.arithmetic(.add, i(Int64.max), i(1))) == .real(Double(Int64.max) + 1))
        #expect(v(.arithmetic(.add, i(1), .constant(.null))) == .null)
        #expect(v(.negate(i(4))) == .integer(-4))
        #expect(v(.coalesce(.constant(.null), i(9))) == .integer(9))
        #expect(v(.conditional(.compare(.less, i(1), i(2)), i(10), i(20))) == .integer(10))
        #expect(v(.fold(.constant(.text("ÉCOLE")))) == .text("ecole"))
        #expect(v(.compare(.less, .constant(.null), i(2))) == .null)
        #expect(v(.compare(.equal, .constant(.null), .constant(.null))) == .integer(1))
        let clubs = try #require(f.person.relationshipsByName["clubs"])
        #expect(v(.count(ToManyPath(base: PropertyPath(scope: 0), relationship: clubs))) == .integer(1))
        #expect(v(.and([.constant(.null), .compare(.equal, i(1), i(2))])) == .integer(0))
        #expect(v(.or([.compare(.less, .constant(.null), i(1)), .compare(.equal, i(1), i(2))])) == .null)
    }

    @Test func objectComparisonsBetweenPaths() throws {
        let f = try Fixture()
        let e = try f.ir(
            #Predicate<Person> { p in p.clubs.contains { c in c.members.contains { m in m != p && m.name.starts(with: "A") } } })
        #expect(e.description == "ANY($0.clubs as $1: ANY($1.members as $2: (($2 != $0) AND beginsWith($2.name, \"A\"))))")
        #expect(
            try f.people(
                #Predicate<Person> { p in p.clubs.contains { c in c.members.contains { m in m != p && m.name.starts(with: "A") } } }) == [
                    "Bob"
                ])
        #expect(
            try f.people(#Predicate<Person> { p in p.clubs.contains { c in c.members.contains { m in m != p && m.town == p.town } } })
                .isEmpty)
        #expect(
            try f.people(#Predicate<Person> { p in p.clubs.contains { c in c.members.contains { m in m != p && m.town != p.town } } }) == [
                "Ada", "Bob", "zoe"
            ])
        let all = try PredicateCompiler.compile(#Predicate<Town> { t in t.people.allSatisfy { $0.town! == t } }, entity: f.town)
        #expect(all.description == "ALL($0.people as $1: ($1.town == $0))")
        #expect(try f.towns(#Predicate<Town> { t in t.people.allSatisfy { $0.town! == t } }) == ["Paris", "Lyon"])
        #expect(try f.towns(#Predicate<Town> { t in t.people.contains { $0.town! != t } }).isEmpty)
    }

    /// Captured objects are not `Codable`, so `#Predicate` rejects them; trees built by hand work.
    @Test func capturedObjects() throws {
        let f = try Fixture()
        let person = PredicateExpressions.Variable<Person>()
        func people(_ e: some PredicateExpression<Bool>) throws -> [String] {
            let ir = try PredicateCompiler.compile(e, variable: person, entity: f.person)
            return f.people.filter { QueryEvaluator.matches(ir, row: $0) }.map(\.name)
        }
        let town = PredicateExpressions.KeyPath(root: person, keyPath: \Person.town)
        let paris = f.object(Town.self, for: f.towns[0])
        let equal = PredicateExpressions.Equal(lhs: town, rhs: PredicateExpressions.Value(Optional(paris)))
        #expect(try PredicateCompiler.compile(equal, variable: person, entity: f.person).description == "($0.town == Town(1))")
        #expect(try people(equal) == ["Ada", "zoe"])
        #expect(try people(PredicateExpressions.NotEqual(lhs: town, rhs: PredicateExpressions.Value(Optional(paris)))) == ["Bob", "Émile"])
        let bob = f.object(Person.self, for: f.people[1])
        #expect(try people(PredicateExpressions.Equal(lhs: person, rhs: PredicateExpressions.Value(bob))) == ["Bob"])
        #expect(try people(PredicateExpressions.NotEqual(lhs: person, rhs: PredicateExpressions.Value(bob))) == ["Ada", "Émile", "zoe"])
        let chess = f.object(Club.self, for: f.clubs[0])
        let clubs = PredicateExpressions.KeyPath(root: person, keyPath: \Person.clubs)
        #expect(
            try people(PredicateExpressions.SequenceContains(sequence: clubs, element: PredicateExpressions.Value(chess))) == ["Ada", "Bob"]
        )
        let some = [f.object(Person.self, for: f.people[0]), f.object(Person.self, for: f.people[3])]
        #expect(
            try people(PredicateExpressions.SequenceContains(sequence: PredicateExpressions.Value(some), element: person)) == ["Ada", "zoe"]
        )
        // A captured object's attributes are read when compiling.
        let lyon = f.object(Town.self, for: f.towns[1])
        lyon.name = "Lyon"
        let townName = PredicateExpressions.OptionalFlatMap(town) { PredicateExpressions.KeyPath(root: $0, keyPath: \Town.name) }
        let lyonName = PredicateExpressions.KeyPath(root: PredicateExpressions.Value(lyon), keyPath: \Town.name)
        #expect(try people(PredicateExpressions.Equal(lhs: PredicateExpressions.ForcedUnwrap(townName), rhs: lyonName)) == ["Bob"])
        // An unsaved object matches nothing.
        let unsaved = Town(entity: f.town)
        #expect(try people(PredicateExpressions.Equal(lhs: town, rhs: PredicateExpressions.Value(Optional(unsaved)))).isEmpty)
    }

    @Test func toManyRelationships() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { $0.clubs.contains { $0.title == "Go" } })
        #expect(e.description == "ANY($0.clubs as $1: ($1.title == \"Go\"))")
        #expect(try f.people(#Predicate<Person> { $0.clubs.contains { $0.title == "Go" } }) == ["Bob", "zoe"])
        #expect(try f.people(#Predicate<Person> { $0.clubs.allSatisfy { $0.title == "Chess" } }) == ["Ada", "Émile"])
        let c = try f.ir(#Predicate<Person> { $0.clubs.count == 2 })
        #expect(c.description == "(count($0.clubs) == 2)")
        #expect(try f.people(#Predicate<Person> { $0.clubs.count == 2 }) == ["Bob"])
        #expect(try f.people(#Predicate<Person> { $0.clubs.isEmpty }) == ["Émile"])
        #expect(try f.people(#Predicate<Person> { !$0.clubs.isEmpty }) == ["Ada", "Bob", "zoe"])
        #expect(try f.towns(#Predicate<Town> { $0.people.contains { $0.age > 35 } }) == ["Paris"])
        #expect(try f.towns(#Predicate<Town> { $0.people.count == 1 }) == ["Lyon"])
    }

    @Test func nestedToMany() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { $0.clubs.contains { $0.members.contains { $0.name == "zoe" } } })
        #expect(e.description == "ANY($0.clubs as $1: ANY($1.members as $2: ($2.name == \"zoe\")))")
        #expect(try f.people(#Predicate<Person> { $0.clubs.contains { $0.members.contains { $0.name == "zoe" } } }) == ["Bob", "zoe"])
        // The inner predicate can refer to the outer object.
        #expect(
            try f.people(#Predicate<Person> { p in p.clubs.contains { c in c.members.contains { m in m.age > p.age } } }) == ["Bob", "zoe"])
        #expect(try f.people(#Predicate<Person> { $0.town?.people.count == 2 }) == ["Ada", "zoe"])
    }

    @Test func conditionals() throws {
        let f = try Fixture()
        let e = try f.ir(#Predicate<Person> { ($0.age > 30 ? $0.score : 0.0) > 8 })
        guard case .compare(.greater, .conditional, _) = e else { Issue.record("got \(e)"); return }
        #expect(try f.people(#Predicate<Person> { ($0.age > 30 ? $0.score : 0.0) > 8 }) == ["Ada"])
    }

    @Test func booleansAndDecimals() throws {
        let f = try Fixture()
        let sample = try #require(f.model.entity(for: Sample.self))
        let rows = [
            try TestRow(sample, 1, ["s": .text("a"), "b": .integer(1), "decimal": (Decimal(95) / 10).storedValue]),
            try TestRow(sample, 2, ["s": .text("b"), "b": .integer(0), "decimal": Decimal(10).storedValue]),
            try TestRow(sample, 3, ["s": .text("c"), "b": .integer(0), "decimal": (Decimal(10025) / 100).storedValue]),
            try TestRow(sample, 4, ["s": .text("d"), "b": .integer(1), "decimal": .null])
        ]
        func matching(_ p: Predicate<Sample>) throws -> [String] {
            let e = try PredicateCompiler.compile(p, entity: sample)
            return rows.filter { QueryEvaluator.matches(e, row: $0) }.map(\.name)
        }
        #expect(try PredicateCompiler.compile(#Predicate<Sample> { $0.b }, entity: sample).description == "($0.b == 1)")
        #expect(try matching(#Predicate<Sample> { $0.b }) == ["a", "d"])
        #expect(try matching(#Predicate<Sample> { !$0.b }) == ["b", "c"])
        #expect(try matching(#Predicate<Sample> { $0.b == false }) == ["b", "c"])
        let ten = Decimal(10)
        // As text "9.5" > "10"; numerically it is not.
        #expect(try matching(#Predicate<Sample> { $0.decimal! > ten }) == ["c"])
        #expect(try matching(#Predicate<Sample> { $0.decimal! <= ten }) == ["a", "b"])
        #expect(try matching(#Predicate<Sample> { $0.decimal == ten }) == ["b"])
        let low = Decimal(9), high = Decimal(50)
        #expect(try matching(#Predicate<Sample> { (low...high).contains($0.decimal!) }) == ["a", "b"])
        let keys = [SortKey(path: PropertyPath(scope: 0, attribute: sample.attributesByName["decimal"]), ascending: true)]
        let sorted = rows.sorted { QueryEvaluator.areInIncreasingOrder($0, $1, keys: keys) }.map(\.name)
        #expect(sorted == ["d", "a", "b", "c"])
    }

    @Test func sortKeys() throws {
        let f = try Fixture()
        func order(_ descriptors: [SortDescriptor<Person>]) throws -> [String] {
            let keys = try PredicateCompiler.sortKeys(descriptors, entity: f.person)
            return f.people.sorted { QueryEvaluator.areInIncreasingOrder($0, $1, keys: keys) }.map(\.name)
        }
        let keys = try PredicateCompiler.sortKeys([SortDescriptor(\Person.age, order: .reverse)], entity: f.person)
        #expect(keys.map(\.description) == ["$0.age DESC"])
        #expect(try order([SortDescriptor(\Person.age, order: .reverse)]) == ["Émile", "Ada", "Bob", "zoe"])
        #expect(try order([SortDescriptor(\Person.name)]) == ["Ada", "Bob", "zoe", "Émile"])
        #expect(try order([SortDescriptor(\Person.name, comparator: .lexical)]) == ["Ada", "Bob", "zoe", "Émile"])
        // Nil first when ascending, last when descending.
        #expect(try order([SortDescriptor(\Person.email)]) == ["Bob", "zoe", "Ada", "Émile"])
        #expect(try order([SortDescriptor(\Person.email, order: .reverse)]) == ["Émile", "Ada", "zoe", "Bob"])
        let town = try PredicateCompiler.sortKeys([SortDescriptor(\Person.town?.name), SortDescriptor(\Person.age)], entity: f.person)
        #expect(town.map(\.description) == ["$0.town.name ASC", "$0.age ASC"])
        #expect(try order([SortDescriptor(\Person.town?.name), SortDescriptor(\Person.age)]) == ["Émile", "Bob", "zoe", "Ada"])
        // Folded keys compare folded text.
        let name = try #require(f.person.attributesByName["name"])
        let folded = [SortKey(path: PropertyPath(scope: 0, attribute: name), ascending: true, folded: true)]
        #expect(f.people.sorted { QueryEvaluator.areInIncreasingOrder($0, $1, keys: folded) }.map(\.name) == ["Ada", "Bob", "Émile", "zoe"])
    }

    @Test func unsupportedSortKeys() throws {
        let f = try Fixture()
        let toMany = unsupportedMessage { _ = try PredicateCompiler.sortKeys([SortDescriptor(\Town.people.count)], entity: f.town) }
        #expect(toMany?.contains("people") == true)
        #expect(toMany?.contains("to-many") == true)
        let computed = unsupportedMessage { _ = try PredicateCompiler.sortKeys([SortDescriptor(\Person.shout)], entity: f.person) }
        #expect(computed?.contains("'name'") == true)
        #expect(computed?.contains("computed") == true)
    }

    @Test func unsupportedExpressions() throws {
        let f = try Fixture()
        let count = unsupportedMessage { _ = try f.ir(#Predicate<Person> { $0.name.count > 3 }) }
        #expect(count?.contains("String.count") == true)
        #expect(count?.contains("PredicateExpressions.KeyPath") == true)
        let regex = unsupportedMessage { _ = try f.ir(#Predicate<Person> { $0.name.contains(/A.a/) }) }
        #expect(regex?.contains("PredicateExpressions.StringContainsRegex") == true)
        #expect(regex?.contains("regular expressions") == true)
        let computed = unsupportedMessage { _ = try f.ir(#Predicate<Person> { $0.shout == "ADA" }) }
        #expect(computed?.contains("computed") == true)
        #expect(computed?.contains("Person.name") == true)
        let first = unsupportedMessage { _ = try f.ir(#Predicate<Person> { $0.clubs.first?.title == "Go" }) }
        #expect(first?.contains("only count and isEmpty") == true)
        let one = Decimal(1)
        let decimal = unsupportedMessage {
            _ = try PredicateCompiler.compile(
                #Predicate<Sample> { $0.decimal! + one > one }, entity: try #require(f.model.entity(for: Sample.self)))
        }
        #expect(decimal?.contains("PredicateExpressions.Arithmetic") == true)
        #expect(decimal?.contains("Decimal") == true)
        let shape = try #require(f.model.entitiesByName["Shape"])
        let typeCheck = unsupportedMessage { _ = try PredicateCompiler.compile(#Predicate<Shape> { $0 is Circle }, entity: shape) }
        #expect(typeCheck?.contains("PredicateExpressions.TypeCheck") == true)
        let max = unsupportedMessage { _ = try f.ir(#Predicate<Person> { [1, 2].max()! == $0.age }) }
        #expect(max?.contains("PredicateExpressions.SequenceMaximum") == true)
        let filter = unsupportedMessage { _ = try f.ir(#Predicate<Person> { $0.clubs.filter { $0.title == "Go" }.count == 1 }) }
        #expect(filter?.contains("PredicateExpressions.Filter") == true)
    }
}

extension Person {
    /// A computed property: readable in Swift, not translatable to SQL.
    var shout: String { name.uppercased() }
    /// A computed property that reads two stored ones and returns one of them unchanged.
    var displayName: String { email ?? name }
    /// A computed property that returns its stored property unchanged, except for zero.
    var ageOrDefault: Int { age == 0 ? 18 : age }
}
