import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// With the Mixed strategy, a view-context save queued on the root context ahead of the merge of
// a background save of the same object is written as it would be after the merge: not lost to
// a version conflict that only the order of two queued blocks made.

@Suite("Mixed: a view save racing a background save", .timeLimit(.minutes(3)))
struct MixedRootConflictTests {
    /// Saves a town in the view context, then holds the root context's write of the view
    /// context's next save (`edit`) until a background context has saved `background` on the
    /// same town; returns the town as stored once everything is written.
    func race(edit: @escaping @Sendable (Town) -> Void, background: @escaping @Sendable (Town) -> Void) async throws -> (
        String, Int, (any Error)?
    ) {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Mixed>(
            name: "Race", managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
        connect.storeLocation = dir.url
        try connect.start()
        let view = connect.viewContext
        try await view.perform {
            let town = Town(context: view)
            town.name = "Oslo"
            town.population = 1
            try view.save()
        }
        try await connect.waitForPendingSaves()
        // The root context's next write waits (on the root's queue) until the background save is
        // done. The test awaits the write's start without blocking a thread of the cooperative
        // pool (which other tests running meanwhile need).
        let (writing, wrote) = AsyncStream<Void>.makeStream()
        let proceed = DispatchSemaphore(value: 0)
        let first = LockedValue(true)
        connect.strategy.rootContext.hooks.saveRefusal = {
            if first.withLock({ f in
                defer { f = false }; return f
            }) {
                wrote.yield()
                wrote.finish()
                _ = proceed.wait(timeout: .now() + 60)  // a safety net, not a measurement
            }
            return nil
        }
        try await view.perform {
            edit(try view.fetch(FetchRequest<Town>())[0])
            try view.save()
        }
        for await _ in writing { break }
        let other = connect.newBackgroundContext()
        try await other.perform {
            background(try other.fetch(FetchRequest<Town>())[0])
            try other.save()
        }
        proceed.signal()
        var failure: (any Error)?
        do { try await connect.waitForPendingSaves() } catch { failure = error }
        let reader = connect.newBackgroundContext()
        let stored = try await reader.perform {
            let town = try reader.fetch(FetchRequest<Town>())[0]
            return (town.name, town.population)
        }
        try? connect.stop()
        return (stored.0, stored.1, failure)
    }

    /// Different properties: both changes are kept.
    @Test func bothChangesAreWrittenWhenTheyTouchDifferentProperties() async throws {
        let (name, population, failure) = try await race(edit: { $0.population = 5 }, background: { $0.name = "Bergen" })
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(name == "Bergen")
        #expect(population == 5)
    }

    /// The same property: the view context's save, written last, wins (as after the merge).
    @Test func theViewSaveWinsOnTheSameProperty() async throws {
        let (name, population, failure) = try await race(edit: { $0.population = 5 }, background: { $0.population = 2 })
        #expect(failure == nil, "\(String(describing: failure))")
        #expect(name == "Oslo")
        #expect(population == 5)
    }
}
