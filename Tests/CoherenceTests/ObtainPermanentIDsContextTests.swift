import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// `obtainPermanentIDs(for:)` with an object of another context throws `.contextMismatch` and
/// changes nothing, as `assign(_:to:)` does: it registered the object in the wrong context,
/// whose `reset()` then took it from its own (its edits were no longer tracked).
@Suite("obtainPermanentIDs and other contexts' objects")
struct ObtainPermanentIDsContextTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func anotherContextsObjectIsATypedError(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        let owner = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator, name: "owner")
        // (The object is only handed over to be refused; the other context never touches it.)
        nonisolated(unsafe) let bee = owner.performAndWait {
            let bee = Person(context: owner)
            bee.name = "bee"
            return bee
        }
        let temporaryID = owner.performAndWait { bee.objectID }
        context.performAndWait {
            let mine = Person(context: context)
            do throws(CoherenceError) {
                try context.obtainPermanentIDs(for: [mine, bee])
                Issue.record("no error")
            } catch {
                #expect(error.code == .contextMismatch)
                #expect(error.entityName == "Person")
            }
            #expect(mine.objectID.isTemporaryID)
            #expect(!context.registeredObjects.contains(bee))
            context.reset()
        }
        try owner.performAndWait {
            #expect(bee.objectID == temporaryID)
            #expect(bee.managedObjectContext === owner)
            bee.age = 5
            #expect(owner.insertedObjects == [bee])
            try owner.save()
        }
        let reader = try SavedPeople.reader(context)
        try reader.performAndWait {
            let bee = try SavedPeople.person("bee", in: reader)
            #expect(bee.age == 5)
        }
    }
}
