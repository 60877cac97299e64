import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// An object inserted again after its context was reset keeps its permanent ID: the save fails
/// with `.conflict` and the stored row stays as it was, in every store (the in-memory store
/// replaced the row, its version starting over at 1).
@Suite("Inserting a saved object again")
struct ReinsertAfterResetTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func theSaveFailsAndTheRowStays(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let id = try context.performAndWait {
            let zed = try SavedPeople.person("zed", in: context)
            zed.age = 7
            try context.save()
            context.reset()
            context.insert(zed)
            zed.name = "again"
            do {
                try context.save()
                Issue.record("The save succeeded.")
            } catch {
                #expect((error as? CoherenceError)?.code == .conflict)
                #expect((error as? CoherenceError)?.message.contains("the store holds a row with its key") == true)
            }
            #expect(context.hasChanges)
            return zed.objectID
        }
        let reader = try SavedPeople.reader(context)
        try reader.performAndWait {
            let zed = try #require(try reader.existingObject(with: id) as? Person)
            #expect(zed.name == "zed" && zed.age == 7)
            #expect(try reader.count(for: FetchRequest<Person>()) == SavedPeople.people.count)
        }
    }
}
