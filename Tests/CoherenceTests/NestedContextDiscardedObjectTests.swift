import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// A child context that saves changes to objects it had saved into its parent, after the parent
// discarded them (rollback or reset), is refused with an error naming the object: the parent is
// left as it was and can still save its own changes.

@Suite("Nested contexts: objects the parent discarded")
struct NestedContextDiscardedObjectTests {
    @Test(arguments: ["rollback", "reset"])
    func aChildSaveNamingObjectsTheParentDiscardedIsRefused(_ discard: String) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "parent")
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            Town(context: child).name = "Oslo"
            try child.save()
        }
        parent.performAndWait { discard == "rollback" ? parent.rollback() : parent.reset() }
        let error = child.performAndWait { () -> CoherenceError? in
            let oslo = child.registeredObjects.compactMap { $0 as? Town }.first
            oslo?.population = 3
            let ada = Person(context: child)
            ada.name = "Ada"
            ada.town = oslo
            do throws(CoherenceError) { try child.save() } catch { return error }
            return nil
        }
        #expect(error?.code == .objectNotFound && error?.entityName == "Town")
        // The parent holds nothing of the refused save and saves its own changes.
        try parent.performAndWait {
            #expect(!parent.hasChanges && parent.registeredObjects.isEmpty)
            Town(context: parent).name = "Rome"
            try parent.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try reopen(coordinator))
        #expect(try reader.performAndWait { try reader.fetch(FetchRequest<Town>()).map(\.name) } == ["Rome"])
    }
}
