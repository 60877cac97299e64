import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Reads its properties when it goes away, as logging code might (probe objects the model's
/// reflection makes run it too).
final class DeinitReader: ManagedObject {
    @Attribute var name: String = "unset"
    @Relationship(inverse: "readers") var team: DeinitGroup?
    @Transformed var tags: [String] = ["t"]
    nonisolated(unsafe) static var seen: [String] = []
    deinit {
        DeinitReader.seen.append("\(name) \(team == nil) \(tags)")
        name = "gone"  // a write, dropped for a probe
    }
}

final class DeinitGroup: ManagedObject {
    @Relationship(inverse: "team") var readers: Set<DeinitReader>
}

@Suite("Object model")
struct ModelTests {
    @Test func reflectsTypedSubclasses() throws {
        let model = try makeTestModel()
        let person = try #require(model.entitiesByName["Person"])
        #expect(person.attributes.map(\.name) == ["name", "email", "age", "score", "createdAt"])
        #expect(person.attributesByName["email"]?.isOptional == true)
        #expect(person.attributesByName["age"]?.type == .integer64)
        #expect(person.attributesByName["age"]?.defaultValue == .integer(0))
        #expect(person.indexes == [["age"]])
        let town = try #require(person.relationshipsByName["town"])
        #expect(town.destinationEntity?.name == "Town")
        #expect(town.inverseRelationship?.name == "people")
        #expect(!town.isToMany)
        #expect(town.hasForeignKey)
        let people = try #require(model.entitiesByName["Town"]?.relationshipsByName["people"])
        #expect(people.isToMany && people.deleteRule == .cascade)
        #expect(people.storage == .inverseForeignKey)
        #expect(model.entitiesByName["Town"]?.uniquenessConstraints == [["name"]])
        let clubs = try #require(person.relationshipsByName["clubs"])
        let members = try #require(model.entitiesByName["Club"]?.relationshipsByName["members"])
        guard case .joinTable(let n1, let first1) = clubs.storage, case .joinTable(let n2, let first2) = members.storage else {
            Issue.record("many-to-many should use a join table"); return
        }
        #expect(n1 == n2)
        #expect(first1 != first2)
        #expect(model.entity(for: Person.self) === person)
    }

    /// A class whose `deinit` reads and writes its properties loads (the probes reflection makes
    /// read placeholders and drop writes), and its real objects read their values.
    @Test func aDeinitThatReadsPropertiesIsSafe() throws {
        DeinitReader.seen = []
        let model = try ManagedObjectModel(types: [DeinitReader.self, DeinitGroup.self])
        #expect(!DeinitReader.seen.isEmpty)  // probes went away, reading placeholders
        DeinitReader.seen = []
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        do {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                let reader = DeinitReader(context: context)
                reader.name = "Ada"
                try context.save()
            }
        }
        #expect(DeinitReader.seen.contains("Ada true [\"t\"]"))
    }

    @Test func inheritance() throws {
        let model = try makeTestModel()
        let shape = try #require(model.entitiesByName["Shape"])
        let circle = try #require(model.entitiesByName["Circle"])
        #expect(shape.isAbstract)
        #expect(!circle.isAbstract)
        #expect(circle.superentity === shape)
        #expect(circle.properties.map(\.name) == ["label", "radius"])
        #expect(circle.propertiesByName["label"] === shape.propertiesByName["label"])
        #expect(Set(shape.subentities.map(\.name)) == ["Circle", "Square"])
        #expect(circle.rootEntity === shape)
        #expect(shape.descendantNumbers.count == 3)
    }

    @Test func typedAccessorsReadAndWriteValues() throws {
        let model = try makeTestModel()
        let p = Person(entity: try #require(model.entity(for: Person.self)))
        #expect(p.name == "")
        p.name = "Ada"
        p.age = 36
        p.email = "ada@example.com"
        #expect(p.name == "Ada")
        #expect(p.age == 36)
        #expect(try p.value(forKey: "name") as? String == "Ada")
        try p.setValue(37, forKey: "age")
        #expect(p.age == 37)
        p.email = nil
        #expect(p.email == nil)
    }

    @Test func dynamicAccessChecksKeysAndTypes() throws {
        let entity = EntityDescription(
            name: "Item",
            properties: [
                AttributeDescription(name: "title", type: .string, defaultValue: "untitled"),
                AttributeDescription(name: "count", type: .integer16)
            ])
        _ = try ManagedObjectModel(entities: [entity])
        let item = ManagedObject(entity: entity)
        #expect(try item.value(forKey: "title") as? String == "untitled")
        #expect(throws: CoherenceError.self) { try item.value(forKey: "nope") }
        do {
            try item.setValue("x", forKey: "count")
            Issue.record("expected a type mismatch")
        } catch {
            #expect(error.code == .typeMismatch)
            #expect(error.propertyName == "count")
        }
        do {
            try item.setValue(70_000, forKey: "count")
            Issue.record("expected a range error for Int16")
        } catch {
            #expect(error.code == .typeMismatch)
        }
        try item.setValue(7, forKey: "count")
        #expect(try item.value(forKey: "count") as? Int16 == 7)
    }

    @Test func builderModelWithConfigurations() throws {
        let town = EntityDescription(
            name: "Town",
            properties: [
                AttributeDescription(name: "name", type: .string)
            ], uniquenessConstraints: [["name"]], userInfo: ["uniquenessAttributes": "name"])
        let note = EntityDescription(
            name: "Note",
            properties: [
                AttributeDescription(name: "text", type: .string, isOptional: true)
            ])
        let model = try ManagedObjectModel(entities: [town, note], configurations: ["Cache": ["Town"], "User": ["Note"]])
        #expect(model.entities(forConfiguration: "Cache")?.map(\.name) == ["Town"])
        #expect(model.entities(forConfiguration: nil)?.count == 2)
        #expect(model.entities(forConfiguration: "Nope") == nil)
        #expect(model.versionHash(forConfiguration: "Cache") != model.versionHash(forConfiguration: "User"))
        #expect(town.userInfo["uniquenessAttributes"] as? String == "name")
    }

    @Test func versionHashIsStableAndSensitive() throws {
        func build(_ type: AttributeType) throws -> ManagedObjectModel {
            try ManagedObjectModel(entities: [EntityDescription(name: "A", properties: [AttributeDescription(name: "x", type: type)])])
        }
        #expect(try build(.string).versionHash == build(.string).versionHash)
        #expect(try build(.string).versionHash != build(.integer64).versionHash)
    }

    @Test(arguments: [
        ("unknownDestination", ModelError.Code.unknownDestination),
        ("unknownInverse", .unknownInverse),
        ("duplicateEntity", .duplicateEntity),
        ("duplicateProperty", .duplicateProperty),
        ("unknownConstraint", .unknownConstraintAttribute),
        ("unknownIndex", .unknownIndexProperty),
        ("unknownSuper", .unknownSuperentity),
        ("badDefault", .invalidDefaultValue),
        ("badRegex", .invalidValidationRule),
        ("inverseMismatch", .inverseMismatch)
    ])
    func invalidModelsAreRejected(_ scenario: String, _ expected: ModelError.Code) throws {
        var entities: [EntityDescription] = []
        var expectEntity = "A", expectProperty: String? = nil
        switch scenario {
        case "unknownDestination":
            entities = [EntityDescription(name: "A", properties: [RelationshipDescription(name: "b", destination: "Missing")])]
            expectProperty = "b"
        case "unknownInverse":
            entities = [
                EntityDescription(name: "A", properties: [RelationshipDescription(name: "b", destination: "B", inverse: "nope")]),
                EntityDescription(name: "B", properties: [])
            ]
            expectProperty = "b"
        case "duplicateEntity":
            entities = [EntityDescription(name: "A", properties: []), EntityDescription(name: "A", properties: [])]
        case "duplicateProperty":
            entities = [
                EntityDescription(
                    name: "A",
                    properties: [
                        AttributeDescription(name: "x", type: .string),
                        AttributeDescription(name: "x", type: .string)
                    ])
            ]
            expectProperty = "x"
        case "unknownConstraint":
            entities = [
                EntityDescription(
                    name: "A", properties: [AttributeDescription(name: "x", type: .string)],
                    uniquenessConstraints: [["y"]])
            ]
            expectProperty = "y"
        case "unknownIndex":
            entities = [EntityDescription(name: "A", properties: [], indexes: [["z"]])]
            expectProperty = "z"
        case "unknownSuper":
            entities = [EntityDescription(name: "A", superentity: "Ghost", properties: [])]
        case "badDefault":
            entities = [EntityDescription(name: "A", properties: [AttributeDescription(name: "x", type: .integer16, defaultValue: "text")])]
            expectProperty = "x"
        case "badRegex":
            entities = [
                EntityDescription(
                    name: "A", properties: [AttributeDescription(name: "x", type: .string, validation: .init(regularExpression: "(["))])
            ]
            expectProperty = "x"
        case "inverseMismatch":
            entities = [
                EntityDescription(name: "A", properties: [RelationshipDescription(name: "b", destination: "B", inverse: "c")]),
                EntityDescription(name: "B", properties: [RelationshipDescription(name: "c", destination: "B", inverse: "c")])
            ]
            expectProperty = "b"
        default:
            Issue.record("unknown scenario"); return
        }
        do {
            _ = try ManagedObjectModel(entities: entities)
            Issue.record("\(scenario): the model should have been rejected")
        } catch {
            #expect(error.code == expected)
            #expect(error.entityName == expectEntity)
            #expect(error.propertyName == expectProperty)
            #expect(error.description.contains(expectEntity))
        }
    }
}
