import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// Logging users out and in (detaching and attaching per-user stores) with the dual-coordinator
// strategy: importer contexts follow the stores the container has attached.

@Suite("Dual coordinator: logging users out and in", .timeLimit(.minutes(2)))
struct DualCoordinatorUserSwitchTests {
    /// Alice's store detached and bob's attached: importer contexts made before either switch
    /// see only bob's objects, and after alice logs in again an importer made while bob was
    /// logged in reads her store at once (the writer coordinator opens a store when it is
    /// attached, not at the next importer context's making).
    @Test func logoutThenLoginShowsNoObjectsOfTheFirstUser() async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(
            types: [Ledger.self, Jotting.self, Item.self], configurations: ["Global": ["Ledger", "Item"], "User": ["Jotting"]])
        let connect = GenericConnect<ContextStrategy.DualCoordinator>(name: "Probe", managedObjectModel: model)
        try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(name: "Global"))
        try connect.start()
        let alice = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "alice", under: dir.url), for: StoreConfiguration(name: "User"))
        let bg = connect.newBackgroundContext()
        try await bg.perform {
            for t in ["a1", "a2"] { Jotting(context: bg).text = t }
            try bg.save()
        }
        let view = connect.viewContext
        await view.perform {}
        let before = try await view.perform { try view.fetch(FetchRequest<Jotting>()).map(\.text).sorted() }
        #expect(before == ["a1", "a2"])
        try connect.detach(persistentStore: alice)
        let bob = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "bob", under: dir.url), for: StoreConfiguration(name: "User"))
        let bg2 = connect.newBackgroundContext()
        try await bg2.perform {
            Jotting(context: bg2).text = "b1"
            try bg2.save()
        }
        // The importer made while alice was logged in sees bob's objects only.
        let oldSees = try await bg.perform { try bg.fetch(FetchRequest<Jotting>()).map(\.text).sorted() }
        #expect(oldSees == ["b1"])
        await view.perform {}
        let after = try await view.perform { try view.fetch(FetchRequest<Jotting>()).map(\.text).sorted() }
        let count = try await view.perform { try view.count(for: FetchRequest<Jotting>()) }
        #expect(after == ["b1"])
        #expect(count == 1)
        try connect.detach(persistentStore: bob)
        let alice2 = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "alice", under: dir.url), for: StoreConfiguration(name: "User"))
        let again = try await view.perform { () -> [String] in
            let all = try view.fetch(FetchRequest<Jotting>(sortBy: [SortDescriptor(\.text)]))
            all.first?.text = "a1-again"
            try view.save()
            return all.map(\.text)
        }
        #expect(again == ["a1-again", "a2"])
        let importerSees = try await bg2.perform { try bg2.fetch(FetchRequest<Jotting>(sortBy: [SortDescriptor(\.text)])).map(\.text) }
        #expect(importerSees == ["a1-again", "a2"])
        try await bg2.perform {
            Jotting(context: bg2).text = "a3"
            try bg2.save()
        }
        let fresh = connect.newBackgroundContext()
        let stored = try await fresh.perform { try fresh.fetch(FetchRequest<Jotting>(sortBy: [SortDescriptor(\.text)])).map(\.text) }
        #expect(stored == ["a1-again", "a2", "a3"])
        try connect.detach(persistentStore: alice2)
        try connect.stop()
    }
}
