import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A context pinned to a query generation on a PostgreSQL store while another process
/// (`CoherencePGClient --change-items`) deletes, inserts and runs batch update, insert and
/// delete requests: it keeps reading its snapshot — fetches, counts, predicates and an object it
/// had not loaded — and moving to the current generation shows the other process's changes.
@Suite(.serialized) struct PostgreSQLGenerationProcessTests {
    @Test(.postgreSQLServer, .timeLimit(.minutes(2)))
    func aPinnedContextKeepsItsSnapshotWhileAnotherProcessChangesTheStore() async throws {
        let helpers = PostgreSQLProcessTests()
        let dir = try TemporaryDirectory()
        let (url, _) = try helpers.storeURL(dir)
        let (coordinator, writer) = try helpers.open(url)
        let ids = try writer.performAndWait { () -> [String: ObjectID] in
            var items: [PGItem] = []
            for name in ["a", "b", "x"] {
                let item = PGItem(context: writer)
                item.name = name
                items.append(item)
            }
            try writer.save()
            return Dictionary(uniqueKeysWithValues: items.map { ($0.name, $0.objectID) })
        }
        let aID = try #require(ids["a"])
        let pinned = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let pinnedNames = try pinned.performAndWait { () -> [String] in
            try pinned.setQueryGeneration(from: .current)
            return try pinned.fetch(FetchRequest<PGItem>(predicate: #Predicate { $0.name != "a" }, sortBy: [SortDescriptor(\.name)])).map(
                \.name)
        }
        #expect(pinnedNames == ["b", "x"])
        let client = try helpers.client(url, ["--change-items"])
        let changed = await client.waitForLine("CHANGED")
        #expect(changed)
        #expect(await client.finish().status == 0)
        // Another context, not pinned, reads the new state.
        #expect(try helpers.items(writer) == ["b", "c", "d"])
        try pinned.performAndWait {
            let all = try pinned.fetch(FetchRequest<PGItem>(sortBy: [SortDescriptor(\.name)]))
            #expect(all.map(\.name) == ["a", "b", "x"])
            #expect(all.map(\.batch) == [0, 0, 0])
            #expect(try pinned.count(for: FetchRequest<PGItem>()) == 3)
            #expect(try pinned.count(for: FetchRequest<PGItem>(predicate: #Predicate { $0.batch == 7 })) == 0)
            let a = try #require(try pinned.existingObject(with: aID) as? PGItem)
            #expect(a.name == "a")
            // Moving to the current generation shows the other process's changes.
            try pinned.setQueryGeneration(from: .current)
            pinned.refreshAllObjects()
            let now = try pinned.fetch(FetchRequest<PGItem>(sortBy: [SortDescriptor(\.name)]))
            #expect(now.map(\.name) == ["b", "c", "d"])
            #expect(now.map(\.batch) == [7, 7, 7])
            #expect(try pinned.count(for: FetchRequest<PGItem>(predicate: #Predicate { $0.batch == 7 })) == 3)
        }
    }
}
