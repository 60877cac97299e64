import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Reads of an entity no attached store holds throw `.noStoreForEntity`, as its save does,
/// instead of answering "nothing".
@Suite("Entities no store holds")
struct NoStoreTests {
    /// Expects `.noStoreForEntity` naming `entity`.
    static func expectNoStore(
        _ entity: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) {
        let error = #expect(throws: CoherenceError.self, sourceLocation: sourceLocation) { try body() }
        #expect(error?.code == .noStoreForEntity, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.entityName == entity, sourceLocation: sourceLocation)
    }

    /// Every read of `Town` through the coordinator, a context and a child context.
    static func expectEveryReadThrows(_ coordinator: PersistentStoreCoordinator) throws {
        let request = FetchRequest<ManagedObject>(entityName: "Town")
        expectNoStore("Town") { _ = try coordinator.fetchObjectIDs(request) }
        expectNoStore("Town") { _ = try coordinator.count(for: request) }
        expectNoStore("Town") { _ = try coordinator.fetchDictionaries(request) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: context)
        for c in [context, child] {
            c.performAndWait {
                expectNoStore("Town") { _ = try c.fetch(request) }
                expectNoStore("Town") { _ = try c.fetchObjectIDs(request) }
                expectNoStore("Town") { _ = try c.count(for: request) }
                var faults = request
                faults.includesPendingChanges = false
                expectNoStore("Town") { _ = try c.fetch(faults) }
                expectNoStore("Town") { _ = try c.count(for: faults) }
            }
        }
    }

    @Test func readsWithNoStoreAtAllThrow() throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try Self.expectEveryReadThrows(coordinator)
    }

    @Test func readsOfAnEntityOnlyADetachedStoreHeldThrow() throws {
        let dir = try TemporaryDirectory()
        let town = EntityDescription(name: "Town", properties: [AttributeDescription(name: "name", type: .string)])
        let note = EntityDescription(name: "Note", properties: [AttributeDescription(name: "text", type: .string)])
        let model = try ManagedObjectModel(entities: [town, note], configurations: ["Cache": ["Town"], "User": ["Note"]])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, configuration: "User", at: dir.file("user.sqlite"))
        try Self.expectEveryReadThrows(coordinator)
        // The entity a store holds still reads (an empty store answers "nothing").
        #expect(try coordinator.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 0)
        // Once a store holds it, the same reads answer.
        let cache = try coordinator.addPersistentStore(type: .inMemory, configuration: "Cache")
        #expect(try coordinator.count(for: FetchRequest<ManagedObject>(entityName: "Town")) == 0)
        try coordinator.remove(cache)
        Self.expectNoStore("Town") { _ = try coordinator.count(for: FetchRequest<ManagedObject>(entityName: "Town")) }
    }
}
