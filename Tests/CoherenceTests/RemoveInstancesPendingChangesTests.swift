import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

final class RpItem: ManagedObject {
    @Attribute var code: String = ""
    @Attribute var count: Int = 0
}

/// `removeInstances(of:matching:)` deletes what matches in the context, unsaved changes
/// included: an edit that makes an object match or stop matching counts, and a matching
/// unsaved insert is deleted (so it is no longer inserted).
@Suite("removeInstances with unsaved changes", .timeLimit(.minutes(2)))
struct RemoveInstancesPendingChangesTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func unsavedChangesDecideWhatMatches(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try ManagedObjectModel(types: [RpItem.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { () throws in
            for (code, count) in [("a", 1), ("b", 1), ("c", 2)] {
                let o = RpItem(context: context)
                o.code = code
                o.count = count
            }
            try context.save()
            let stored = Dictionary(uniqueKeysWithValues: try context.fetch(FetchRequest<RpItem>()).map { ($0.code, $0) })
            try #require(stored["b"]).count = 5
            try #require(stored["c"]).count = 1
            let d = RpItem(context: context)
            d.code = "d"
            d.count = 1
            try context.removeInstances(of: RpItem.self, matching: #Predicate { $0.count == 1 })
            #expect(context.deletedObjects.compactMap { ($0 as? RpItem)?.code }.sorted() == ["a", "c"])
            #expect(context.insertedObjects.isEmpty)
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let rows = try reader.performAndWait { () throws in
            try reader.fetch(FetchRequest<RpItem>()).map { "\($0.code) \($0.count)" }
        }
        #expect(rows == ["b 5"])
    }
}
