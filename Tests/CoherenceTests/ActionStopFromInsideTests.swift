import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// An action that stops its own connect (a logout action, say): `stop()` waits for the running
// actions, and must not wait for the one calling it.

/// Stops the connect it was given from inside `execute` and records the outcome.
final class StopsItsConnect: GenericAction {
    let connect: LockedValue<(any Connect)?>
    let outcome = LockedValue<String?>(nil)
    init(_ connect: any Connect) { self.connect = LockedValue(connect) }
    func execute() throws {
        let c = connect.withLock { c in
            defer { c = nil }
            return c
        }
        do {
            try c?.stop()
            outcome.withLock { $0 = "stopped" }
        } catch {
            outcome.withLock { $0 = "\(error)" }
        }
    }
}

/// The same as an async entity action.
final class StopsItsConnectAsync: AsyncEntityAction {
    typealias ManagedObjectType = Item
    let connect: LockedValue<(any Connect)?>
    let outcome = LockedValue<String?>(nil)
    init(_ connect: any Connect) { self.connect = LockedValue(connect) }
    func execute(context: ActionContext) async throws {
        let c = connect.withLock { c in
            defer { c = nil }
            return c
        }
        do {
            try c?.stop()
            outcome.withLock { $0 = "stopped" }
        } catch {
            outcome.withLock { $0 = "\(error)" }
        }
    }
}

@Suite("Actions: stopping the connect from inside an action", .timeLimit(.minutes(1)))
struct ActionStopFromInsideTests {
    @Test func aGenericActionStopsItsConnect() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        try connect.start()
        let action = StopsItsConnect(connect)
        let proxy = try connect.execute(action)
        await proxy.finished
        #expect(action.outcome.withLock { $0 } == "stopped")
        #expect(proxy.completionStatus == .successful)
        #expect(connect.state == .stopped)
        #expect(connect.persistentStoreCoordinator.persistentStores.isEmpty)
    }

    @Test func anAsyncEntityActionStopsItsConnect() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        try connect.start()
        let action = StopsItsConnectAsync(connect)
        let proxy = try connect.execute(action)
        await proxy.finished
        #expect(action.outcome.withLock { $0 } == "stopped")
        #expect(connect.state == .stopped)
        #expect(connect.persistentStoreCoordinator.persistentStores.isEmpty)
        // Started again, it runs entity actions as before.
        try connect.start()
        let again = try connect.execute(ImportItems([["sku": "a", "title": "A", "price": 1.0]]))
        try await again.value
        #expect(try connect.persistentStoreCoordinator.count(for: FetchRequest<Item>()) == 1)
    }
}
