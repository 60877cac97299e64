import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("Changed values")
struct ChangedValuesTests {
    /// A to-many relationship changed (on either side) is in `changedValues()` with its current
    /// destinations, as in Core Data: the objects were updated while `changedValues()` was empty.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func toManyChangesAreListed(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let club = Club(context: context)
            club.title = "chess"
            try context.save()
            let zed = try SavedPeople.person("zed", in: context)
            let apple = try SavedPeople.person("apple", in: context)
            club.members.insert(zed)
            #expect(club.isUpdated && zed.isUpdated)
            #expect(club.changedValues()["members"] as? Set<ManagedObject> == [zed])
            #expect(zed.changedValues()["clubs"] as? Set<ManagedObject> == [club])
            #expect(zed.changedValues().count == 1)
            apple.clubs.insert(club)
            #expect(club.changedValues()["members"] as? Set<ManagedObject> == [zed, apple])
            try context.save()
            #expect(club.changedValues().isEmpty && zed.changedValues().isEmpty)
            // A removal, and a change undone.
            club.members.remove(zed)
            #expect(club.changedValues()["members"] as? Set<ManagedObject> == [apple])
            #expect(zed.changedValues()["clubs"] as? Set<ManagedObject> == [])
            club.members.insert(zed)
            #expect(!context.hasChanges)
            #expect(club.changedValues().isEmpty && zed.changedValues().isEmpty)
            // Moving a person to another town changes both towns' people.
            let rome = try #require(zed.town)
            let oslo = try context.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Oslo" }))[0]
            zed.town = oslo
            #expect((oslo.changedValues()["people"] as? Set<ManagedObject>)?.contains(zed) == true)
            #expect((rome.changedValues()["people"] as? Set<ManagedObject>)?.contains(zed) == false)
            #expect(zed.changedValues()["town"] as? ManagedObject === oslo)
        }
    }
}
