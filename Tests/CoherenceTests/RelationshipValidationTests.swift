import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A save checks relationship constraints: count bounds of to-many relationships and required
/// to-one relationships (listed per entity when the model loads).
@Suite struct RelationshipValidationTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Team",
                properties: [
                    AttributeDescription(name: "name", type: .string, defaultValue: ""),
                    RelationshipDescription(
                        name: "members", destination: "Member", inverse: "team", isToMany: true,
                        minCount: 1, maxCount: 2)
                ]),
            EntityDescription(
                name: "Member",
                properties: [
                    AttributeDescription(name: "name", type: .string, defaultValue: ""),
                    RelationshipDescription(name: "team", destination: "Team", inverse: "members", isOptional: false),
                    RelationshipDescription(name: "mentor", destination: "Member")
                ])
        ])
    }

    @Test func theModelListsOnlyConstrainedRelationships() throws {
        let model = try Self.model()
        #expect(model.entitiesByName["Team"]?.constrainedRelationships.map(\.name) == ["members"])
        #expect(model.entitiesByName["Member"]?.constrainedRelationships.map(\.name) == ["team"])
    }

    /// Sets a to-one relationship of an untyped object (the dynamic API sets attributes only).
    static func setTeam(_ member: ManagedObject, _ team: ManagedObject?) throws {
        let slot = try #require(member.entity.relationshipsByName["team"]?.slot)
        member._setRelatedObjects(team.map { [$0] } ?? [], at: slot)
    }

    @Test func countsAndRequiredToOnesAreChecked() throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        try coordinator.addPersistentStore(type: .sqlite, at: dir.file("teams.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let team = try context.insertNewObject(forEntityName: "Team")
            // No members: below the minimum.
            #expect(throws: CoherenceError.self) { try context.save() }
            let a = try context.insertNewObject(forEntityName: "Member")
            try Self.setTeam(a, team)
            try context.save()
            // A member without a team: the required to-one is missing.
            let loner = try context.insertNewObject(forEntityName: "Member")
            do {
                try context.save()
                Issue.record("expected a validation error")
            } catch let error as CoherenceError {
                #expect(error.code == .validation)
                #expect(error.underlyingErrors.contains { ($0 as? CoherenceError)?.propertyName == "team" })
            }
            try Self.setTeam(loner, team)
            try context.save()
            // A third member: above the maximum.
            let c = try context.insertNewObject(forEntityName: "Member")
            try Self.setTeam(c, team)
            #expect(throws: CoherenceError.self) { try context.save() }
            context.delete(c)
            try context.save()
        }
    }
}
