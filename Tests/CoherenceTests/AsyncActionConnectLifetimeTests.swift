import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// An async entity action that tells the test it runs, waits until the test opens its gate, then
/// merges one item.
final class GatedAsyncImport: AsyncEntityAction {
    typealias ManagedObjectType = Item
    let started: AsyncStream<Void>.Continuation
    let gate: AsyncStream<Void>
    init(started: AsyncStream<Void>.Continuation, gate: AsyncStream<Void>) {
        self.started = started
        self.gate = gate
    }
    func execute(context: ActionContext) async throws {
        started.yield()
        for await _ in gate { break }
        try context.merge(objects: [["sku": "late", "title": "Late", "price": 1.0]] as [[String: any Sendable]], for: Item.self)
    }
}

private func makeItemConnect(_ kind: StrategyKind, _ dir: TemporaryDirectory) throws -> any Connect {
    let model = try ManagedObjectModel(types: [Item.self, Memo.self])
    func make<S: ContextStrategyType>(_: S.Type) -> any Connect {
        let connect = GenericConnect<S>(name: "Lifetime", managedObjectModel: model)
        connect.storeLocation = dir.url
        return connect
    }
    switch kind {
    case .direct: return make(ContextStrategy.Direct.self)
    case .directIndependent: return make(ContextStrategy.DirectIndependent.self)
    case .indirectNested: return make(ContextStrategy.IndirectNested.self)
    case .mixed: return make(ContextStrategy.Mixed.self)
    }
}

private func storedSKUs(_ file: URL) throws -> [String] {
    let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Item.self, Memo.self]))
    try coordinator.addPersistentStore(type: .sqlite, at: file)
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    return try context.performAndWait { try context.fetch(FetchRequest<Item>()).map(\.sku).sorted() }
}

@Suite("Actions: a connect released while an async entity action runs", .timeLimit(.minutes(2)))
struct AsyncActionConnectLifetimeTests {
    /// The actions guide: "A running entity action keeps its connect until it finishes" — the
    /// async kind too. Its save after the app let go of the connect is written to the file.
    @Test(arguments: StrategyKind.allCases)
    func aRunningAsyncEntityActionKeepsItsConnectAndItsSaveIsWritten(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let (started, startedContinuation) = AsyncStream<Void>.makeStream()
        let (gate, gateContinuation) = AsyncStream<Void>.makeStream()
        var connect: (any Connect)? = try makeItemConnect(kind, dir)
        try connect?.start()
        let proxy = try #require(try connect?.execute(GatedAsyncImport(started: startedContinuation, gate: gate)))
        for await _ in started { break }
        // The action runs; the app lets go of the connect.
        weak let weakConnect: AnyObject? = connect
        let coordinator = try #require(connect?.persistentStoreCoordinator)
        connect = nil
        #expect(weakConnect != nil)
        gateContinuation.yield()
        try await proxy.value
        #expect(proxy.completionStatus == .successful)
        // Once it finished, the connect goes: it waits for its strategy's saves, then detaches
        // the store (on the thread that let go of it last, a few steps after the proxy ended).
        var rounds = 0
        while !coordinator.persistentStores.isEmpty, rounds < 100_000 {
            await Task.yield()
            rounds += 1
        }
        #expect(weakConnect == nil)
        #expect(coordinator.persistentStores.isEmpty)
        #expect(try storedSKUs(dir.file("Lifetime.sqlite")) == ["late"])
    }

    /// A background context the app kept after letting go of its container: its save throws a
    /// typed error (the stores were detached), it neither hangs nor crashes.
    @Test(arguments: StrategyKind.allCases)
    func aBackgroundContextSavedAfterItsContainerWentThrowsATypedError(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let bg: ManagedObjectContext
        do {
            let connect = try makeItemConnect(kind, dir)
            try connect.start()
            bg = connect.newBackgroundContext()
        }
        let code = await bg.perform { () -> CoherenceError.Code? in
            let item = Item(context: bg)
            item.sku = "x"
            do { try bg.save() } catch { return (error as? CoherenceError)?.code }
            return nil
        }
        #expect(code == .noStoreForEntity)
    }
}
