import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// A child context reads through its parent, so an object its parent (or an ancestor) inserted
// and has not saved is found by its temporary ID, as a fetch in the child finds it.

@Suite("Nested contexts: an ancestor's unsaved objects by temporary ID")
struct NestedContextTemporaryIDTests {
    @Test func aChildFindsItsParentsInsertedObjectByTemporaryID() throws {
        let dir = try TemporaryDirectory()
        let (coordinator, parent, child) = try NestedContextPermanentIDTests.parentAndChild(in: dir)
        let grandchild = ManagedObjectContext(concurrencyType: .privateQueue, parent: child, name: "grandchild")
        let (osloID, niceID) = parent.performAndWait {
            let oslo = Town(context: parent)
            oslo.name = "Oslo"
            let nice = Town(context: parent)
            nice.name = "Nice"
            return (oslo.objectID, nice.objectID)
        }
        #expect(osloID.isTemporaryID)
        try child.performAndWait {
            let oslo = try #require(child.existingObject(with: osloID) as? Town)
            #expect(oslo.name == "Oslo")
            #expect(child.object(with: niceID) === (try child.existingObject(with: niceID)))
        }
        try grandchild.performAndWait {
            let oslo = try #require(grandchild.existingObject(with: osloID) as? Town)
            #expect(oslo.name == "Oslo")
            oslo.population = 7
            grandchild.delete(try grandchild.existingObject(with: niceID))
            try grandchild.save()
        }
        try child.performAndWait { try child.save() }
        try parent.performAndWait { try parent.save() }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let towns = try reader.performAndWait { try reader.fetch(FetchRequest<Town>()).map { "\($0.name) \($0.population)" } }
        #expect(towns == ["Oslo 7"])
    }

    /// A temporary ID no ancestor holds names nothing: `.objectNotFound`, and no object is left
    /// registered under it in the parent.
    @Test func aTemporaryIDNoAncestorHoldsIsNotFound() throws {
        let dir = try TemporaryDirectory()
        let (_, parent, child) = try NestedContextPermanentIDTests.parentAndChild(in: dir)
        let grandchild = ManagedObjectContext(concurrencyType: .privateQueue, parent: child, name: "grandchild")
        let other = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "other")
        let strayID = other.performAndWait { Town(context: other).objectID }
        for context in [child, grandchild] {
            context.performAndWait {
                do throws(CoherenceError) {
                    _ = try context.existingObject(with: strayID)
                    Issue.record("found a sibling's unsaved object")
                } catch {
                    #expect(error.code == .objectNotFound)
                }
            }
        }
        parent.performAndWait { #expect(parent.registeredObject(for: strayID) == nil) }
        child.performAndWait { #expect(child.registeredObject(for: strayID) == nil) }
    }
}
