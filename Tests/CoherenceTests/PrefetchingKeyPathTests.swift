import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// `relationshipKeyPathsForPrefetching`: a name that is not a relationship of the entity (a
/// typo, an attribute) makes the fetch throw `.unknownKey` (it was silently ignored); a key
/// path through several relationships is accepted and prefetches its first one.
@Suite("Prefetching key paths")
struct PrefetchingKeyPathTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func unknownNamesAreTypedErrors(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            var request = FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])
            for bad in ["towns", "name", "town.nonsense", "town.", "", "clubs.members.age"] {
                request.relationshipKeyPathsForPrefetching = ["town", bad]
                do throws(CoherenceError) {
                    _ = try context.fetch(request)
                    Issue.record("'\(bad)': no error")
                } catch {
                    #expect(error.code == .unknownKey, "'\(bad)'")
                    #expect(error.entityName == "Person" && error.propertyName == bad, "'\(bad)'")
                }
            }
            request.relationshipKeyPathsForPrefetching = ["town", "clubs", "town.people", "clubs.members.town"]
            let people = try context.fetch(request)
            #expect(people.map(\.name) == SavedPeople.people.map(\.0).sorted())
            #expect(people.allSatisfy { $0.town != nil })
        }
    }
}
