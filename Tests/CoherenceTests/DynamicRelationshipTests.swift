import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Relationships read and set by name, as migration handlers do on models with no typed class
/// (Core Data's `value(forKey:)` / `setValue(_:forKey:)` on relationships).
@Suite("Dynamic relationships by name")
struct DynamicRelationshipTests {
    private func chain(in dir: TemporaryDirectory) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: try makeChainModel())
        return (coordinator, ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator))
    }

    private func object(_ entity: String, _ name: String, in context: ManagedObjectContext) throws -> ManagedObject {
        let description = try #require(context.persistentStoreCoordinator.managedObjectModel.entitiesByName[entity])
        let o = ManagedObject(entity: description)
        context.insert(o)
        try o.setValue(name, forKey: "name")
        return o
    }

    @Test func toOneAndToManyAreSetAndReadByNameWithTheirInverses() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, context) = try chain(in: dir)
        try context.performAndWait {
            let country = try object("Country", "Erewhon", in: context)
            let north = try object("Region", "North", in: context)
            let south = try object("Region", "South", in: context)
            try north.setValue(country, forKey: "country")
            #expect((try country.value(forKey: "regions") as? [ManagedObject])?.map(\.nameValue) == ["North"])
            try country.setValue(Set([north, south]), forKey: "regions")
            #expect((try south.value(forKey: "country") as? ManagedObject) === country)
            let city = try object("City", "Port", in: context)
            let tags = [try object("Tag", "harbour", in: context), try object("Tag", "old", in: context)]
            try city.setValue(south, forKey: "region")
            try city.setValue(tags, forKey: "tags")
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let cities = try reader.fetch(FetchRequest<ManagedObject>(entityName: "City"))
            let city = try #require(cities.first)
            let region = try #require(try city.value(forKey: "region") as? ManagedObject)
            #expect(region.nameValue == "South")
            #expect((try region.value(forKey: "country") as? ManagedObject)?.nameValue == "Erewhon")
            let tags = try #require(try city.value(forKey: "tags") as? [ManagedObject])
            #expect(tags.map(\.nameValue).sorted() == ["harbour", "old"])
            let tagCities = try #require(try tags[0].value(forKey: "cities") as? [ManagedObject])
            #expect(tagCities.map(\.nameValue) == ["Port"])
            // nil clears a to-one and empties a to-many.
            try city.setValue(nil, forKey: "region")
            try city.setValue(nil, forKey: "tags")
            #expect(try city.value(forKey: "region") == nil)
            #expect((try city.value(forKey: "tags") as? [ManagedObject])?.isEmpty == true)
            #expect((try region.value(forKey: "cities") as? [ManagedObject])?.isEmpty == true)
        }
    }

    @Test func wrongValuesAreTypedErrorsAndChangeNothing() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, context) = try chain(in: dir)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let stranger = try other.performAndWait { try object("Country", "Elsewhere", in: other) }
        try context.performAndWait {
            let region = try object("Region", "North", in: context)
            let tag = try object("Tag", "t", in: context)
            let cases: [(Any?, String, CoherenceError.Code)] = [
                ("Erewhon", "country", .typeMismatch),  // not an object
                ([tag], "country", .typeMismatch),  // a list for a to-one
                (tag, "country", .typeMismatch),  // an object of another entity
                (tag, "cities", .typeMismatch),  // an object for a to-many
                ([tag], "cities", .typeMismatch),  // destinations of another entity
                (stranger, "country", .contextMismatch)  // an object of another context
            ]
            for (value, key, code) in cases {
                let error = #expect(throws: CoherenceError.self) { try region.setValue(value, forKey: key) }
                #expect(error?.code == code, "\(key): \(String(describing: error))")
                #expect(error?.propertyName == key)
            }
            #expect(try region.value(forKey: "country") == nil)
            #expect((try region.value(forKey: "cities") as? [ManagedObject])?.isEmpty == true)
            #expect((try tag.value(forKey: "cities") as? [ManagedObject])?.isEmpty == true)
        }
    }
}
