import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A store whose configuration holds one side of a many-to-many relationship (Club, without
/// Person): the relationship never holds pairs there, since relationships do not cross stores.
@Suite("Split configurations")
struct SplitConfigurationTests {
    /// The store opens, saves and deletes its objects and opens again. On PostgreSQL it could
    /// not be opened (`.storeOpenFailed`: the join table referenced the table of Person, which
    /// the store does not have).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aStoreWithOneSideOfAManyToManyOpens(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Person.self, Town.self, Club.self], configurations: ["Clubs": ["Club"]])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let url = try dir.storeURL(type)
        try coordinator.addPersistentStore(type: type, configuration: "Clubs", at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for title in ["chess", "go"] {
                let club = Club(context: context)
                club.title = title
            }
            try context.save()
            context.reset()
            let clubs = try context.fetch(FetchRequest<Club>(sortBy: [SortDescriptor(\.title)]))
            #expect(clubs.map(\.title) == ["chess", "go"])
            #expect(clubs.allSatisfy { $0.members.isEmpty })
            context.delete(clubs[0])
            try context.save()
        }
        guard type != .inMemory, let url else { return }
        let again = PersistentStoreCoordinator(managedObjectModel: model)
        try again.addPersistentStore(type: type, configuration: "Clubs", at: url)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: again)
        let titles = try reader.performAndWait { try reader.fetch(FetchRequest<Club>()).map(\.title) }
        #expect(titles == ["go"])
    }
}
