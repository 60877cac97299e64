import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// An importer context made through a connect's dual-coordinator strategy before any store is
// attached works on the container's coordinator (the writer coordinator is decided once a store
// is attached); its saves are still merged into the view context, each once.

@Suite("Dual coordinator: an importer made before a store is attached", .timeLimit(.minutes(2)))
struct DualCoordinatorEarlyImporterTests {
    /// Saves `name` as a new town through `context`; returns its ID.
    private func saveTown(_ name: String, in context: ManagedObjectContext) async throws -> ObjectID {
        try await context.perform {
            let t = Town(context: context)
            t.name = name
            try context.save()
            return t.objectID
        }
    }

    /// The IDs inserted by the view context's ObjectsDidChange events, in order, until `last`
    /// is among them.
    private func inserted(_ events: AsyncStream<ContextEvent>, until last: ObjectID) async -> [ObjectID] {
        var seen: [ObjectID] = []
        for await event in events where event.kind == .objectsDidChange {
            seen += event.inserted
            if event.inserted.contains(last) { break }
        }
        return seen
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func itsSavesAreMergedIntoTheViewOnce(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.DualCoordinator>(
            name: "Early", managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
        connect.storeLocation = dir.url
        let early = connect.strategy.importerContext()
        #expect(early.persistentStoreCoordinator === connect.persistentStoreCoordinator)
        try connect.attachPersistentStore(for: StoreConfiguration(type: type))
        try connect.start()
        let events = connect.viewContext.events
        // Before the writer coordinator is decided…
        let first = try await saveTown("Oslo", in: early)
        // …and after (a second coordinator for the file; the container's for a store in memory).
        let later = connect.strategy.importerContext()
        #expect((later.persistentStoreCoordinator === connect.persistentStoreCoordinator) == (type == .inMemory))
        let second = try await saveTown("Bergen", in: early)
        let marker = try await saveTown("Marker", in: later)
        let seen = await inserted(events, until: marker)
        #expect(seen.filter { $0 == first }.count == 1)
        #expect(seen.filter { $0 == second }.count == 1)
        let names = try await connect.viewContext.perform {
            try connect.viewContext.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)])).map(\.name)
        }
        #expect(names == ["Bergen", "Marker", "Oslo"])
        try connect.stop()
    }
}
