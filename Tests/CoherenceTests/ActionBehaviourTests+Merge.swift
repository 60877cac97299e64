import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// An entity action running a merge (or anything returning a summary) and keeping the result.
final class MergeRun<T: ManagedObject>: EntityAction {
    typealias ManagedObjectType = T
    let body: @Sendable (ActionContext) throws -> MergeSummary
    let summary = LockedValue<MergeSummary?>(nil)
    init(_ body: @escaping @Sendable (ActionContext) throws -> MergeSummary) { self.body = body }
    func execute(context: ActionContext) throws {
        let s = try body(context)
        summary.withLock { $0 = s }
    }
}

struct MissingSummary: Error {}

/// Runs `body` as an entity action for `T` and returns its summary (rethrows the action's error).
@discardableResult
func runMerge<T: ManagedObject>(
    _ connect: ActConnect, _ type: T.Type,
    _ body: @escaping @Sendable (ActionContext) throws -> MergeSummary
) async throws -> MergeSummary {
    let action = MergeRun<T>(body)
    let proxy = try connect.execute(action)
    try await proxy.value
    guard let summary = action.summary.withLock({ $0 }) else { throw MissingSummary() }
    return summary
}

/// An incoming product.
func product(_ sku: String, _ title: String = "T", price: Double = 1, stock: Int = 1, category: String = "a") -> [String: any Sendable] {
    ["sku": sku, "title": title, "price": price, "stock": stock, "category": category]
}

func sku(_ i: Int) -> String { "p" + String(repeating: "0", count: max(0, 5 - String(i).count)) + String(i) }

/// A stored product, as plain values.
struct ProductRow: Equatable, Sendable, CustomStringConvertible {
    var sku: String
    var title: String
    var price: Double
    var stock: Int
    var active: Bool
    var category: String
    var note: String?
    init(_ p: ActProduct) {
        sku = p.sku; title = p.title; price = p.price; stock = p.stock; active = p.active; category = p.category; note = p.note
    }
    var description: String { "\(sku) \(title) \(price) \(stock) \(active) \(category) \(note ?? "nil")" }
}

/// The stored products, sorted by SKU, read through a fresh background context.
func storedProducts(_ connect: ActConnect) async throws -> [ProductRow] {
    let context = connect.newBackgroundContext()
    return try await context.perform {
        try context.fetch(FetchRequest<ActProduct>(sortBy: [SortDescriptor(\.sku)])).map(ProductRow.init)
    }
}

/// Row versions of the stored products by SKU.
func productVersions(_ connect: ActConnect) throws -> [String: Int64] {
    let coordinator = connect.persistentStoreCoordinator
    let ids = try coordinator.fetchObjectIDs(FetchRequest<ActProduct>())
    let rows = try coordinator.rows(for: ids)
    var result: [String: Int64] = [:]
    for (_, row) in rows {
        guard let slot = row.entity.attributesByName["sku"]?.slot, case .text(let key) = row.values[slot] else { continue }
        result[key] = row.version
    }
    return result
}

/// Seeds products p00000…p0000(n-1) titled "T".
func seedProducts(_ connect: ActConnect, _ count: Int, category: (Int) -> String = { _ in "a" }) async throws {
    let items = (0..<count).map { product(sku($0), category: category($0)) }
    let summary = try await runMerge(connect, ActProduct.self) { try $0.merge(objects: items, for: ActProduct.self) }
    #expect(summary.inserted == count)
}

func expectActionError(_ code: ActionError.Code, message: String? = nil, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("no error, expected \(code)")
    } catch let error as ActionError {
        #expect(error.code == code)
        if let message { #expect(error.message == message) }
    } catch {
        Issue.record("unexpected error \(error)")
    }
}

// MARK: Statistics and notifications

@Suite("Action behaviour: statistics and notifications", .timeLimit(.minutes(10)))
struct ActionStatisticsBehaviourTests {
    @Test func timesAreSetAndExecutionTimeIsZeroUntilFinished() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        let action = GateAction()
        let proxy = try connect.execute(action)
        let started = await waitOffPool(action.started)
        let during = proxy.statistics
        action.release.signal()
        await proxy.finished
        let after = proxy.statistics
        #expect(started)
        #expect(during.startTime != nil && during.finishTime == nil && during.executionTime == 0)
        let start = try #require(after.startTime)
        let finish = try #require(after.finishTime)
        #expect(finish >= start)
        #expect(after.executionTime > 0)
        #expect(after.executionTime == finish.timeIntervalSince(start))
        #expect(ActionStatistics().executionTime == 0)
    }

    @Test func mergeStatisticsCountExactly() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await seedProducts(connect, 10)
        // 4 updated (0…3), 3 unchanged (4…6), 3 new (10…12); 7…9 deleted.
        let incoming = (0..<4).map { product(sku($0), "U") } + (4..<7).map { product(sku($0)) } + (10..<13).map { product(sku($0)) }
        let action = MergeRun<ActProduct> { try $0.merge(objects: incoming, for: ActProduct.self) }
        let proxy = try connect.execute(action)
        try await proxy.value
        let s = proxy.statistics
        #expect(action.summary.withLock { $0 } == MergeSummary(inserted: 3, updated: 4, deleted: 3, saved: true))
        #expect(s.inserts == 3)
        #expect(s.updates == 4)
        #expect(s.deletes == 3)
        #expect(s.fetches == 10)
        #expect(s.fetchTime >= 0 && s.saveTime >= 0 && s.performTime > 0)
        #expect(s.performTime >= s.fetchTime + s.saveTime)
        #expect(abs(s.otherTime - (s.performTime - s.fetchTime - s.saveTime)) < 1e-9)
        #expect(s.otherTime >= 0)
        let text = s.description
        #expect(text.contains("inserts 3") && text.contains("updates 4") && text.contains("deletes 3") && text.contains("fetched rows 10"))
        #expect(text.contains("execution") && text.contains("ms"))
        #expect(try await storedProducts(connect).map(\.sku) == (0..<7).map(sku) + (10..<13).map(sku))
    }

    @Test func failedEntityActionsHaveNoContextCounts() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let action = MergeRun<ActProduct> { context in
            try context.merge(objects: [product("a"), product("b")], for: ActProduct.self)
            throw Boom()
        }
        let proxy = try connect.execute(action)
        await proxy.finished
        #expect(proxy.completionStatus == .failed)
        #expect(proxy.statistics.inserts == 0 && proxy.statistics.fetches == 0)
        #expect(proxy.statistics.finishTime != nil)
    }

    @Test func notificationsCarryTheConnectAndTheProxyInOrder() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let log = ActionNotificationLog()
        let events = connect.actionEvents
        let generic = try connect.execute(Counter())
        let entity = try connect.execute(CountingEntityAction<ActProduct>())
        await generic.finished
        await entity.finished
        var seen: [(ActionEvent.Kind, ObjectIdentifier)] = []
        var finishes = 0
        for await event in events where event.proxy === generic || event.proxy === entity {
            seen.append((event.kind, ObjectIdentifier(event.proxy)))
            if event.kind == .didFinishExecuting { finishes += 1 }
            if finishes == 2 { break }
        }
        let connectID = ObjectIdentifier(connect)
        for proxy in [generic, entity] {
            let entries = log.entries(for: proxy)
            #expect(entries.map(\.name) == [.actionDidStartExecuting, .actionDidFinishExecuting])
            #expect(entries.allSatisfy { $0.object == connectID })
            #expect(entries.map(\.stateAtPost) == [.executing, .finished])
            let kinds = seen.filter { $0.1 == ObjectIdentifier(proxy) }.map(\.0)
            #expect(kinds == [.didStartExecuting, .didFinishExecuting])
        }
        #expect(ActionProxy.userInfoKey == "ActionProxy")
        #expect(Notification.Name.actionDidStartExecuting.rawValue == "ActionDidStartExecuting")
        #expect(Notification.Name.actionDidFinishExecuting.rawValue == "ActionDidFinishExecuting")
    }
}

// MARK: ActionContext.merge

@Suite("Action behaviour: merge", .timeLimit(.minutes(10)))
struct ActionMergeBehaviourTests {
    @Test func orderOfTheInputDoesNotMatter() async throws {
        let dir = try TemporaryDirectory()
        let sorted = try makeBehaviourConnect(dir, name: "Sorted")
        let shuffled = try makeBehaviourConnect(dir, name: "Shuffled")
        try sorted.start()
        try shuffled.start()
        try await seedProducts(sorted, 12)
        try await seedProducts(shuffled, 12)
        let incoming = (6..<18).map { product(sku($0), "N\($0)", price: Double($0)) }
        // A fixed permutation: odd positions reversed, then even ones.
        let permuted =
            incoming.enumerated().filter { $0.offset % 2 == 1 }.map(\.element).reversed()
            + incoming.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let a = try await runMerge(sorted, ActProduct.self) { try $0.merge(objects: incoming, for: ActProduct.self) }
        let b = try await runMerge(shuffled, ActProduct.self) { try $0.merge(objects: Array(permuted), for: ActProduct.self) }
        #expect(a == b)
        #expect(a == MergeSummary(inserted: 6, updated: 6, deleted: 6, saved: true))
        let rowsA = try await storedProducts(sorted)
        let rowsB = try await storedProducts(shuffled)
        #expect(rowsA == rowsB)
        #expect(rowsA.map(\.sku) == (6..<18).map(sku))
        #expect(rowsA.map(\.title) == (6..<18).map { "N\($0)" })
    }

    @Test func emptyInputDeletesEverythingInScope() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await seedProducts(connect, 5)
        let summary = try await runMerge(connect, ActProduct.self) { try $0.merge(objects: [], for: ActProduct.self) }
        #expect(summary == MergeSummary(inserted: 0, updated: 0, deleted: 5, saved: true))
        #expect(try await storedProducts(connect).isEmpty)
    }

    @Test func subsetFilterLimitsDeletionsToItsScope() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await seedProducts(connect, 6) { $0 < 3 ? "a" : "b" }
        let summary = try await runMerge(connect, ActProduct.self) { context in
            try context.merge(
                objects: [product(sku(1), "kept", category: "a")], for: ActProduct.self,
                subsetFilter: #Predicate<ActProduct> { $0.category == "a" })
        }
        #expect(summary == MergeSummary(inserted: 0, updated: 1, deleted: 2, saved: true))
        let rows = try await storedProducts(connect)
        #expect(rows.map(\.sku) == [sku(1), sku(3), sku(4), sku(5)])
        #expect(rows.first?.title == "kept")
    }

    @Test func conditionFalseProtectsFromUpdateAndDelete() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await runMerge(connect, ActProduct.self) { context in
            try context.merge(
                objects: [product("p1", stock: 0), product("p2", stock: 5), product("p3", stock: 0), product("p4", stock: 5)],
                for: ActProduct.self)
        }
        let summary = try await runMerge(connect, ActProduct.self) { context in
            try context.merge(
                objects: [product("p1", "new", stock: 0), product("p2", "new", stock: 5)], for: ActProduct.self,
                condition: { $0.stock > 0 })
        }
        #expect(summary == MergeSummary(inserted: 0, updated: 1, deleted: 1, saved: true))
        let rows = try await storedProducts(connect)
        #expect(rows.map(\.sku) == ["p1", "p2", "p3"])
        #expect(rows.map(\.title) == ["T", "new", "T"])
    }

    @Test func ignoredAttributesAreNotOverwritten() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await runMerge(connect, ActProduct.self) { try $0.merge(objects: [product("p1", "old", price: 10)], for: ActProduct.self) }
        let summary = try await runMerge(connect, ActProduct.self) { context in
            try context.merge(objects: [product("p1", "new", price: 99)], for: ActProduct.self, ignoreAttributes: ["price"])
        }
        #expect(summary.updated == 1)
        let rows = try await storedProducts(connect)
        #expect(rows.map(\.title) == ["new"])
        #expect(rows.map(\.price) == [10])
    }

    @Test func nothingIsSavedWhenNothingChanged() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let items = (0..<4).map { product(sku($0), "same", price: 2) }
        try await runMerge(connect, ActProduct.self) { try $0.merge(objects: items, for: ActProduct.self) }
        let versions = try productVersions(connect)
        let action = MergeRun<ActProduct> { context in
            let summary = try context.merge(objects: items.reversed(), for: ActProduct.self)
            if context.performAndWait({ context.hasChanges }) { throw Boom() }
            return summary
        }
        let proxy = try connect.execute(action)
        try await proxy.value
        #expect(action.summary.withLock { $0 } == MergeSummary(inserted: 0, updated: 0, deleted: 0, saved: false))
        #expect(proxy.statistics.inserts == 0 && proxy.statistics.updates == 0 && proxy.statistics.deletes == 0)
        #expect(versions.count == 4)
        #expect(try productVersions(connect) == versions)
    }

    @Test func compositeUniquenessAttributes() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let seed: [[String: any Sendable]] = [
            ["region": "eu", "code": 1, "label": "A"], ["region": "eu", "code": 2, "label": "B"],
            ["region": "us", "code": 1, "label": "C"]
        ]
        try await runMerge(connect, ActPair.self) { try $0.merge(objects: seed, for: ActPair.self) }
        let incoming: [[String: any Sendable]] = [
            ["region": "us", "code": 2, "label": "D"], ["region": "us", "code": 1, "label": "C"],
            ["region": "eu", "code": 1, "label": "A2"]
        ]
        let summary = try await runMerge(connect, ActPair.self) { try $0.merge(objects: incoming, for: ActPair.self) }
        #expect(summary == MergeSummary(inserted: 1, updated: 1, deleted: 1, saved: true))
        let context = connect.newBackgroundContext()
        let rows: [String] = try await context.perform {
            try context.fetch(FetchRequest<ActPair>(sortBy: [SortDescriptor(\.region), SortDescriptor(\.code)]))
                .map { "\($0.region)-\($0.code)-\($0.label)" }
        }
        #expect(rows == ["eu-1-A2", "us-1-C", "us-2-D"])
    }

    @Test func wrongValueTypeFailsAndSavesNothing() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await seedProducts(connect, 3)
        let before = try await storedProducts(connect)
        await expectActionError(.invalidValue) {
            try await runMerge(connect, ActProduct.self) { context in
                try context.merge(
                    objects: [product("new1"), product(sku(0), "changed"), ["sku": "bad", "price": "cheap"]], for: ActProduct.self)
            }
        }
        await expectActionError(.invalidValue) {
            try await runMerge(connect, ActProduct.self) { try $0.merge(objects: [["sku": 42]], for: ActProduct.self) }
        }
        #expect(try await storedProducts(connect) == before)
    }

    @Test func missingKeyAttributeFailsAndSavesNothing() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await seedProducts(connect, 2)
        let before = try await storedProducts(connect)
        await expectActionError(.invalidValue) {
            try await runMerge(connect, ActProduct.self) {
                try $0.merge(objects: [product("x"), ["title": "no sku"]], for: ActProduct.self)
            }
        }
        await expectActionError(.invalidValue) {
            try await runMerge(connect, ActPair.self) { try $0.merge(objects: [["region": "eu", "label": "no code"]], for: ActPair.self) }
        }
        #expect(try await storedProducts(connect) == before)
    }

    @Test func mergingAnUnmanagedEntityFails() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        await expectActionError(.unmanagedEntity, message: "Entity 'ActNote' not managed, cannot merge objects.") {
            try await runMerge(connect, ActProduct.self) { try $0.merge(objects: [["text": "hi"]], for: ActNote.self) }
        }
        await expectActionError(.unmanagedEntity, message: "Entity 'ActVehicle' not managed, cannot merge objects.") {
            try await runMerge(connect, ActProduct.self) { try $0.merge(objects: [["vin": "1"]], for: ActVehicle.self) }
        }
        // A class outside the model.
        await expectActionError(.unmanagedEntity, message: "Entity 'Town' not managed, cannot merge objects.") {
            try await runMerge(connect, ActProduct.self) { try $0.merge(objects: [["name": "Rome"]], for: Town.self) }
        }
        let count = try connect.persistentStoreCoordinator.count(for: FetchRequest<ActNote>())
        #expect(count == 0)
    }

    @Test func actionContextUsesObjectTrumpAndDoesNotSaveByItself() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let policy = LockedValue<MergePolicy?>(nil)
        let action = MergeRun<ActProduct> { context in
            policy.withLock { $0 = context.mergePolicy }
            context.performAndWait {
                let p = ActProduct(context: context)
                p.sku = "unsaved"
            }
            return MergeSummary()
        }
        try await connect.execute(action).value
        #expect(policy.withLock { $0 } === MergePolicy.mergeByPropertyObjectTrump)
        #expect(try connect.persistentStoreCoordinator.count(for: FetchRequest<ActProduct>()) == 0)
    }

    @Test func valuesFromJSONSerializationMerge() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let json = Data(
            """
            [{"sku": "j1", "title": "One", "price": 2, "stock": 3, "active": true, "category": "x", "note": null},
             {"sku": "j2", "title": "Two", "price": 1.5, "stock": 1, "active": false, "category": "x", "note": "n"},
             {"sku": "j3", "title": "Three", "price": 0, "stock": 0, "active": 1, "category": "x"}]
            """.utf8)
        let summary = try await runMerge(connect, ActProduct.self) { context in
            guard let objects = try JSONSerialization.jsonObject(with: json) as? [[String: Any]] else { throw Boom() }
            return try context.merge(objects: objects, for: ActProduct.self)
        }
        #expect(summary.inserted == 3)
        let rows = try await storedProducts(connect)
        #expect(rows.map(\.description) == ["j1 One 2.0 3 true x nil", "j2 Two 1.5 1 false x n", "j3 Three 0.0 0 true x nil"])
        // The same JSON again changes nothing.
        let again = try await runMerge(connect, ActProduct.self) { context in
            guard let objects = try JSONSerialization.jsonObject(with: json) as? [[String: Any]] else { throw Boom() }
            return try context.merge(objects: objects, for: ActProduct.self)
        }
        #expect(again == MergeSummary())
    }

    @Test func mergeSavesReachTheViewContext() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let view = connect.viewContext
        let changes = view.events
        try await runMerge(connect, ActProduct.self) {
            try $0.merge(objects: [product("v1"), product("v2"), product("v3")], for: ActProduct.self)
        }
        let event = await firstEvent(changes) { $0.kind == .objectsDidChange && !$0.inserted.isEmpty }
        #expect(event?.inserted.count == 3)
        #expect(event?.inserted.allSatisfy { $0.entity.name == "ActProduct" } == true)
        let skus: [String] = try await view.perform { try view.fetch(FetchRequest<ActProduct>(sortBy: [SortDescriptor(\.sku)])).map(\.sku) }
        #expect(skus == ["v1", "v2", "v3"])
    }

    @Test func largeMergeGivesTheRightCounts() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let n = 10_000
        try await seedProducts(connect, n)
        // 5,000 overlap (half of them changed), 5,000 new, 5,000 gone.
        let incoming = (n / 2..<n + n / 2).map { i in product(sku(i), i < n && i % 2 == 0 ? "changed" : "T") }
        let summary = try await runMerge(connect, ActProduct.self) { try $0.merge(objects: incoming, for: ActProduct.self) }
        #expect(summary == MergeSummary(inserted: n / 2, updated: n / 4, deleted: n / 2, saved: true))
        #expect(try connect.persistentStoreCoordinator.count(for: FetchRequest<ActProduct>()) == n)
    }
}

// MARK: Lifecycle

@Suite("Action behaviour: lifecycle", .timeLimit(.minutes(10)))
struct ActionLifecycleBehaviourTests {
    @Test func suspendedHoldsQueuedActionsAndRunningOnesFinish() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let running = GateProductAction()
        let first = try connect.execute(running)
        let started = await waitOffPool(running.started)
        connect.suspended = true
        let entityAction = CountingEntityAction<ActProduct>()
        let genericAction = Counter()
        let queuedEntity = try connect.execute(entityAction)
        let queuedGeneric = try connect.execute(genericAction)
        running.release.signal()
        await first.finished
        let held = (queuedEntity.state, queuedGeneric.state, entityAction.runs.withLock { $0 }, genericAction.count.withLock { $0 })
        let suspendedRead = connect.suspended
        connect.suspended = false
        try await queuedEntity.value
        try await queuedGeneric.value
        #expect(started)
        #expect(first.completionStatus == .successful)
        #expect(suspendedRead)
        #expect(held == (.pending, .pending, 0, 0))
        #expect(entityAction.runs.withLock { $0 } == 1 && genericAction.count.withLock { $0 } == 1)
        #expect(!connect.suspended)
    }

    @Test func suspendedBeforeStartHoldsEntityQueues() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        connect.suspended = true
        try connect.start()
        let action = CountingEntityAction<ActTag>()
        let proxy = try connect.execute(action)
        let held = (proxy.state, action.runs.withLock { $0 })
        connect.suspended = false
        try await proxy.value
        #expect(held == (.pending, 0))
        #expect(action.runs.withLock { $0 } == 1)
    }

    @Test func stopCancelsQueuedWaitsForRunningThenDetaches() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        let running = GateProductAction(merging: [product("s1"), product("s2")])
        let first = try connect.execute(running)
        let started = await waitOffPool(running.started)
        let queuedA = CountingEntityAction<ActProduct>()
        let queuedB = CountingEntityAction<ActProduct>()
        let completion = CompletionRecorder()
        let proxyA = try connect.execute(queuedA, completionBlock: completion.block)
        let proxyB = try connect.execute(queuedB)

        let returned = LockedValue(false)
        let stopError = LockedValue<String?>(nil)
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            do { try connect.stop() } catch { stopError.withLock { $0 = "\(error)" } }
            returned.withLock { $0 = true }
            stopped.signal()
        }.start()
        // stop() cancels what has not started: that tells us it has begun.
        await proxyA.finished
        await proxyB.finished
        let whileWaiting = (returned.withLock { $0 }, connect.state, connect.persistentStoreCoordinator.persistentStores.count, first.state)
        running.release.signal()
        let stopReturned = await waitOffPool(stopped)

        #expect(started)
        #expect(whileWaiting == (false, .stopping, 1, .executing))
        #expect(stopReturned && stopError.withLock { $0 } == nil)
        #expect(proxyA.completionStatus == .canceled && proxyB.completionStatus == .canceled)
        #expect(queuedA.runs.withLock { $0 } == 0 && queuedB.runs.withLock { $0 } == 0)
        #expect(completion.calls == [.finished])
        // The running action finished its work (the stores were still attached) before the detach.
        #expect(first.completionStatus == .successful)
        #expect(first.statistics.inserts == 2)
        #expect(connect.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(connect.state == .stopped)
        do {
            _ = try connect.execute(CountingEntityAction<ActProduct>())
            Issue.record("entity action accepted after stop")
        } catch let error as ActionError {
            #expect(error.message == "Entity 'ActProduct' not managed by Connect")
        }
        // What the running action saved is on disk.
        let again = try makeBehaviourConnect(dir)
        try again.start()
        #expect(try again.persistentStoreCoordinator.count(for: FetchRequest<ActProduct>()) == 2)
        try again.stop()
    }
}
