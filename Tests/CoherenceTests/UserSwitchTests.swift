import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

private func probeModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(
        types: [Ledger.self, Jotting.self, Item.self], configurations: ["Global": ["Ledger", "Item"], "User": ["Jotting"]])
}

private func makeConnect(_ kind: StrategyKind, _ model: ManagedObjectModel) -> any Connect {
    switch kind {
    case .direct: return GenericConnect<ContextStrategy.Direct>(name: "Probe", managedObjectModel: model)
    case .directIndependent: return GenericConnect<ContextStrategy.DirectIndependent>(name: "Probe", managedObjectModel: model)
    case .indirectNested: return GenericConnect<ContextStrategy.IndirectNested>(name: "Probe", managedObjectModel: model)
    case .mixed: return GenericConnect<ContextStrategy.Mixed>(name: "Probe", managedObjectModel: model)
    }
}

private func pending(_ connect: any Connect) async throws {
    switch connect {
    case let c as GenericConnect<ContextStrategy.IndirectNested>: try await c.waitForPendingSaves()
    case let c as GenericConnect<ContextStrategy.Mixed>: try await c.waitForPendingSaves()
    default: break
    }
}

private func texts(_ file: URL, configuration: String, model: ManagedObjectModel) throws -> [String] {
    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    try coordinator.addPersistentStore(type: .sqlite, configuration: configuration, at: file)
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    return try context.performAndWait {
        if configuration == "User" { return try context.fetch(FetchRequest<Jotting>()).map(\.text).sorted() }
        return try context.fetch(FetchRequest<Ledger>()).map(\.title).sorted()
    }
}

// Logging a user out (detaching the user's store) and another in, with each strategy: a save of
// changes to the detached store is refused whole, and the next user sees none of the first's
// objects; the first user logging in again edits objects the view context kept.

@Suite("Stack: logging users out and in", .timeLimit(.minutes(2)))
struct UserSwitchTests {
    @Test(arguments: StrategyKind.allCases)
    func viewSaveSpanningGlobalAndDetachedUserStoreWritesNothing(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let model = try probeModel()
        let connect = makeConnect(kind, model)
        let global = try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(name: "Global"))
        try connect.start()
        let alice = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "alice", under: dir.url), for: StoreConfiguration(name: "User"))
        let view = connect.viewContext
        try await view.perform {
            let l = Ledger(context: view)
            l.title = "l1"
            let j = Jotting(context: view)
            j.text = "a1"
            try view.save()
        }
        try await pending(connect)
        // Edit both, unsaved; then alice logs out.
        try await view.perform {
            let j = try view.fetch(FetchRequest<Jotting>()).first!
            j.text = "a1-edited"
            let l = try view.fetch(FetchRequest<Ledger>()).first!
            l.title = "l1-edited"
        }
        try connect.detach(persistentStore: alice)
        let bob = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "bob", under: dir.url), for: StoreConfiguration(name: "User"))
        let saveError = await view.perform { () -> CoherenceError? in
            do {
                try view.save()
                return nil
            } catch {
                return error as? CoherenceError
            }
        }
        try await pending(connect)
        #expect(saveError?.code == .storeNotAttached)
        try connect.detach(persistentStores: [global, bob])
        #expect(try texts(dir.file("Probe.global.sqlite"), configuration: "Global", model: model) == ["l1"])
        #expect(try texts(dir.file("bob/Probe.user.sqlite"), configuration: "User", model: model) == [])
        #expect(try texts(dir.file("alice/Probe.user.sqlite"), configuration: "User", model: model) == ["a1"])
    }

    @Test(arguments: StrategyKind.allCases)
    func logoutThenLoginShowsNoObjectsOfTheFirstUser(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let model = try probeModel()
        let connect = makeConnect(kind, model)
        try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(name: "Global"))
        try connect.start()
        let alice = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "alice", under: dir.url), for: StoreConfiguration(name: "User"))
        let bg = connect.newBackgroundContext()
        try await bg.perform {
            for t in ["a1", "a2"] { Jotting(context: bg).text = t }
            try bg.save()
        }
        try await pending(connect)
        let view = connect.viewContext
        let before = try await view.perform { try view.fetch(FetchRequest<Jotting>()).map(\.text).sorted() }
        if kind != .directIndependent { #expect(before == ["a1", "a2"]) }
        try connect.detach(persistentStore: alice)
        let bob = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "bob", under: dir.url), for: StoreConfiguration(name: "User"))
        let bg2 = connect.newBackgroundContext()
        try await bg2.perform {
            Jotting(context: bg2).text = "b1"
            try bg2.save()
        }
        try await pending(connect)
        let after = try await view.perform { try view.fetch(FetchRequest<Jotting>()).map(\.text).sorted() }
        let count = try await view.perform { try view.count(for: FetchRequest<Jotting>()) }
        #expect(after == ["b1"])
        #expect(count == 1)
        // Alice logs in again beside bob; the view context edits one of her old objects.
        try connect.detach(persistentStore: bob)
        let alice2 = try connect.attachPersistentStore(
            at: try StoreLocation.location(forUser: "alice", under: dir.url), for: StoreConfiguration(name: "User"))
        #expect(alice2.identifier == alice.identifier)
        let again = try await view.perform { () -> [String] in
            let all = try view.fetch(FetchRequest<Jotting>(sortBy: [SortDescriptor(\.text)]))
            all.first?.text = "a1-again"
            try view.save()
            return all.map(\.text)
        }
        try await pending(connect)
        try connect.detach(persistentStore: alice2)
        #expect(try texts(dir.file("alice/Probe.user.sqlite"), configuration: "User", model: model) == ["a1-again", "a2"])
    }
}
