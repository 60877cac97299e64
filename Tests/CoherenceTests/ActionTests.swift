import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A product entity managed through `userInfo["uniquenessAttributes"]`.
final class Item: ManagedObject {
    @Attribute var sku: String = ""
    @Attribute var title: String = ""
    @Attribute var price: Double = 0
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": " sku "] }
}

/// An entity with no uniqueness attributes (not managed).
final class Memo: ManagedObject {
    @Attribute var text: String = ""
}

func makeActionConnect(_ dir: TemporaryDirectory) throws -> GenericConnect<ContextStrategy.Mixed> {
    let model = try ManagedObjectModel(types: [Item.self, Memo.self])
    let connect = GenericConnect<ContextStrategy.Mixed>(name: "Actions", managedObjectModel: model)
    connect.storeLocation = dir.url
    return connect
}

final class Counter: GenericAction {
    let count = LockedValue(0)
    func execute() throws { count.withLock { $0 += 1 } }
}

struct Boom: Error, Equatable {}

final class Failing: GenericAction {
    func execute() throws { throw Boom() }
}

/// Blocks in execute until released; records cancel() calls.
final class Blocking: GenericAction {
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let cancels = LockedValue(0)
    let throwsAfterCancel: Bool
    init(throwsAfterCancel: Bool = false) { self.throwsAfterCancel = throwsAfterCancel }
    func execute() throws {
        started.signal()
        release.wait()
        if throwsAfterCancel { throw Boom() }
    }
    func cancel() {
        cancels.withLock { $0 += 1 }
        release.signal()
    }
}

final class ImportItems: EntityAction {
    typealias ManagedObjectType = Item
    let items: [[String: any Sendable]]
    init(_ items: [[String: any Sendable]]) { self.items = items }
    func execute(context: ActionContext) throws {
        try context.merge(objects: items, for: Item.self)
    }
}

final class WriteMemo: EntityAction {
    typealias ManagedObjectType = Memo
    func execute(context: ActionContext) throws {}
}

@Suite("Actions")
struct ActionTests {
    @Test func genericActionRunsBeforeStartAndSucceeds() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        let action = Counter()
        let completions = LockedValue(0)
        let proxy = try connect.execute(action) { p in
            #expect(p.state == .finished)
            completions.withLock { $0 += 1 }
        }
        try await proxy.value
        #expect(proxy.state == .finished)
        #expect(proxy.completionStatus == .successful)
        #expect(action.count.withLock { $0 } == 1)
        #expect(proxy.statistics.executionTime >= 0 && proxy.statistics.startTime != nil && proxy.statistics.finishTime != nil)
        proxy.waitUntilFinished()
        #expect(completions.withLock { $0 } == 1)
    }

    @Test func throwingActionFailsWithItsError() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        let proxy = try connect.execute(Failing())
        await proxy.finished
        #expect(proxy.completionStatus == .failed)
        #expect(proxy.error is Boom)
        await #expect(throws: (any Error).self) { try await proxy.value }
    }

    @Test func entityActionsNeedAManagedEntityAndAStartedConnect() throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        do {
            _ = try connect.execute(ImportItems([]))
            Issue.record("entity action before start")
        } catch let error as ActionError {
            #expect(error.code == .unmanagedEntity)
            #expect(error.message == "Entity 'Item' not managed by Connect")
        }
        try connect.start()
        #expect(connect.managedEntities == ["Item": ["sku"]])
        do {
            _ = try connect.execute(WriteMemo())
            Issue.record("unmanaged entity accepted")
        } catch let error as ActionError {
            #expect(error.message == "Entity 'Memo' not managed by Connect")
        }
    }

    @Test func entityActionMergesAndReportsStatistics() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        try connect.start()
        let first = try connect.execute(
            ImportItems([
                ["sku": "a", "title": "A", "price": 1.0], ["sku": "b", "title": "B", "price": 2.0],
                ["sku": "c", "title": "C", "price": 3.0]
            ]))
        try await first.value
        #expect(first.statistics.inserts == 3)
        // b updated, c deleted, d inserted; a unchanged.
        let second = try connect.execute(
            ImportItems([
                ["sku": "d", "title": "D"], ["sku": "a", "title": "A", "price": 1.0],
                ["sku": "b", "title": "B2", "price": 2.0]
            ]))
        try await second.value
        let s = second.statistics
        #expect(s.inserts == 1 && s.updates == 1 && s.deletes == 1)
        #expect(s.fetches == 3)
        #expect(s.performTime > 0)
        let rows = try connect.persistentStoreCoordinator.fetchDictionaries(FetchRequest<Item>(sortBy: [SortDescriptor(\.sku)]))
        #expect(rows.map { $0["sku"] as? String } == ["a", "b", "d"])
        #expect(rows.map { $0["title"] as? String } == ["A", "B2", "D"])
    }

    @Test func cancelBeforeRunningSkipsExecute() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        connect.suspended = true
        let action = Counter()
        let proxy = try connect.execute(action)
        #expect(proxy.state == .pending)
        proxy.cancel()
        await proxy.finished
        connect.suspended = false
        #expect(proxy.completionStatus == .canceled)
        #expect(action.count.withLock { $0 } == 0)
    }

    @Test func cancelWhileRunningCallsCancelOnceAndEndsCanceled() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        let action = Blocking(throwsAfterCancel: true)
        let proxy = try connect.execute(action)
        action.started.wait()
        #expect(proxy.state == .executing)
        proxy.cancel()
        proxy.cancel()
        await proxy.finished
        #expect(action.cancels.withLock { $0 } == 1)
        #expect(proxy.completionStatus == .canceled)
        #expect(proxy.error is Boom)  // the error is kept
        proxy.cancel()  // after finishing: nothing changes
        #expect(proxy.completionStatus == .canceled && action.cancels.withLock { $0 } == 1)
    }

    @Test func notificationsStartThenFinishWithTheProxy() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeActionConnect(dir)
        let events = connect.actionEvents
        let proxy = try connect.execute(Counter())
        var kinds: [ActionEvent.Kind] = []
        for await event in events where event.proxy === proxy {
            kinds.append(event.kind)
            if event.kind == .didFinishExecuting { break }
        }
        #expect(kinds == [.didStartExecuting, .didFinishExecuting])
    }
}
