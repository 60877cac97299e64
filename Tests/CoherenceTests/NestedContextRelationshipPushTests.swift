import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A child context's save brings into its parent what the child changed in relationships, and
/// keeps what the parent changed in them since the child read them.
@Suite struct NestedContextRelationshipPushTests {
    static func saveNice(_ f: QueryGenerationTests.Fixture) throws -> ObjectID {
        let w = f.context("w")
        return try w.performAndWait {
            let nice = Town(context: w)
            nice.name = "Nice"
            try w.save()
            return nice.objectID
        }
    }

    /// Every person with their town, then every town with its number of people, as stored.
    static func stored(_ f: QueryGenerationTests.Fixture) throws -> [String] {
        let check = f.context("check")
        return try check.performAndWait {
            let people = try check.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\Person.name)]))
            let towns = try check.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\Town.name)]))
            return people.map { "\($0.name):\($0.town?.name ?? "-")" } + towns.map { "\($0.name) \($0.people.count)" }
        }
    }

    /// The child read Lyon's people, the parent added Dee to Lyon, the child moved Cy out of
    /// Lyon and saved: Dee stays in Lyon. (The child's whole list of Lyon's people replaced
    /// the parent's, which took Dee's town away.)
    @Test func aChildsToManyEditKeepsTheParentsAddition() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let parent = f.context("parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            let lyon = try #require(child.existingObject(with: f.town) as? Town)
            #expect(lyon.people.count == 3)
        }
        try parent.performAndWait {
            let dee = Person(context: parent)
            dee.name = "Dee"
            dee.town = try #require(parent.existingObject(with: f.town) as? Town)
        }
        try child.performAndWait {
            let cy = try #require(child.existingObject(with: f.people[2]) as? Person)
            cy.town = nil
            try child.save()
        }
        let inParent = try parent.performAndWait { () throws -> [String] in
            let lyon = try #require(parent.existingObject(with: f.town) as? Town)
            return lyon.people.map(\.name).sorted()
        }
        #expect(inParent == ["Ada", "Bob", "Dee"])
        try parent.performAndWait { try parent.save() }
        #expect(try Self.stored(f) == ["Ada:Lyon", "Bob:Lyon", "Cy:-", "Dee:Lyon", "Lyon 3"])
    }

    /// The same for a many-to-many relationship: the child adds Cy to the club after the
    /// parent added Bob; both are members.
    @Test func aChildsManyToManyEditKeepsTheParentsAddition() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let w = f.context("w")
        let clubID = try w.performAndWait {
            let club = Club(context: w)
            club.title = "Chess"
            club.members.insert(try #require(w.existingObject(with: f.people[0]) as? Person))
            try w.save()
            return club.objectID
        }
        let parent = f.context("parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            let club = try #require(child.existingObject(with: clubID) as? Club)
            #expect(club.members.count == 1)
        }
        try parent.performAndWait {
            let club = try #require(parent.existingObject(with: clubID) as? Club)
            club.members.insert(try #require(parent.existingObject(with: f.people[1]) as? Person))
        }
        try child.performAndWait {
            let club = try #require(child.existingObject(with: clubID) as? Club)
            club.members.insert(try #require(child.existingObject(with: f.people[2]) as? Person))
            club.members.remove(try #require(child.existingObject(with: f.people[0]) as? Person))
            try child.save()
        }
        let inParent = try parent.performAndWait { () throws -> [String] in
            let club = try #require(parent.existingObject(with: clubID) as? Club)
            return club.members.map(\.name).sorted()
        }
        #expect(inParent == ["Bob", "Cy"])
        try parent.performAndWait { try parent.save() }
        let check = f.context("check")
        let members = try check.performAndWait {
            try #require(check.existingObject(with: clubID) as? Club).members.map(\.name).sorted()
        }
        #expect(members == ["Bob", "Cy"])
    }

    /// A child that set Ada's town and set it back saves another change of hers: the parent's
    /// move of Ada to Nice, made meanwhile, stays (the child's unchanged to-one was pushed).
    @Test func aChildsUnchangedToOneDoesNotUndoTheParentsChange() throws {
        let f = try QueryGenerationTests.Fixture(.sqlite)
        let niceID = try Self.saveNice(f)
        let parent = f.context("parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            let ada = try #require(child.existingObject(with: f.people[0]) as? Person)
            let lyon = try #require(ada.town)
            ada.town = try #require(child.existingObject(with: niceID) as? Town)
            ada.town = lyon
        }
        try parent.performAndWait {
            let ada = try #require(parent.existingObject(with: f.people[0]) as? Person)
            ada.town = try #require(parent.existingObject(with: niceID) as? Town)
        }
        try child.performAndWait {
            let ada = try #require(child.existingObject(with: f.people[0]) as? Person)
            ada.age = 44
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        #expect(try Self.stored(f) == ["Ada:Nice", "Bob:Lyon", "Cy:Lyon", "Lyon 2", "Nice 1"])
    }
}
