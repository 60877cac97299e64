import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// An entity action on towns that does nothing.
final class IdleTownAction: EntityAction {
    typealias ManagedObjectType = Town
    func execute(context: ActionContext) throws {}
}

@Suite("Actions: a connect released with actions queued", .timeLimit(.minutes(3)))
struct ActionLifetimeTests {
    /// Queued entity actions do not keep a released connect alive (its stores stay open
    /// otherwise); they never run, and their proxies end canceled, with their completion block
    /// called once.
    @Test func aReleasedConnectIsFreedAndItsQueuedActionsEndCanceled() async throws {
        let dir = try TemporaryDirectory()
        weak var released: GenericConnect<ContextStrategy.Direct>?
        let completions = LockedValue(0)
        var proxies: [ActionProxy] = []
        var coordinator: PersistentStoreCoordinator?
        do {
            let connect = GenericConnect<ContextStrategy.Direct>(
                name: "Released", managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
            connect.storeLocation = dir.url
            try connect.start()
            connect.suspended = true
            for _ in 0..<3 {
                proxies.append(try connect.execute(IdleTownAction()) { _ in completions.withLock { $0 += 1 } })
            }
            released = connect
            coordinator = connect.persistentStoreCoordinator
        }
        try #require(released == nil)
        #expect(coordinator?.persistentStores.isEmpty == true)
        for proxy in proxies {
            await proxy.finished
            #expect(proxy.completionStatus == .canceled)
            await #expect(throws: CancellationError.self) { try await proxy.value }
        }
        #expect(completions.withLock { $0 } == 3)
    }
}

@Suite("Actions: the event stream of a released connect", .timeLimit(.minutes(3)))
struct ActionEventStreamLifetimeTests {
    /// A loop over `actionEvents` ends when the connect is released, after the start and
    /// finish events of the queued action that releasing it cancelled.
    @Test func theActionEventsOfAReleasedConnectEndAfterTheCancellations() async throws {
        let dir = try TemporaryDirectory()
        let stream: AsyncStream<ActionEvent>
        let proxy: ActionProxy
        do {
            let connect = GenericConnect<ContextStrategy.Direct>(
                name: "Events", managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
            connect.storeLocation = dir.url
            try connect.start()
            connect.suspended = true
            stream = connect.actionEvents
            proxy = try connect.execute(IdleTownAction())
        }
        var kinds: [ActionEvent.Kind] = []
        for await event in stream {
            #expect(event.proxy === proxy)
            kinds.append(event.kind)
        }
        #expect(kinds == [.didStartExecuting, .didFinishExecuting])
        #expect(proxy.completionStatus == .canceled)
    }
}
