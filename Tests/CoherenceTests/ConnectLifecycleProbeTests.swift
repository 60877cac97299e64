import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// An async entity action that merges one item at once.
final class QuickAsyncImport: AsyncEntityAction {
    typealias ManagedObjectType = Item
    let sku: String
    init(sku: String) { self.sku = sku }
    func execute(context: ActionContext) async throws {
        try context.merge(objects: [["sku": sku, "title": "T", "price": 1.0]] as [[String: any Sendable]], for: Item.self)
    }
}

enum ConnectKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case direct, directIndependent, indirectNested, mixed, dual
    var testDescription: String { rawValue }
}

private func probeConnect(_ kind: ConnectKind, _ dir: URL) throws -> any Connect {
    let model = try ManagedObjectModel(types: [Item.self, Memo.self])
    func make<S: ContextStrategyType>(_: S.Type) -> any Connect {
        let connect = GenericConnect<S>(name: "Probe", managedObjectModel: model)
        connect.storeLocation = dir
        return connect
    }
    switch kind {
    case .direct: return make(ContextStrategy.Direct.self)
    case .directIndependent: return make(ContextStrategy.DirectIndependent.self)
    case .indirectNested: return make(ContextStrategy.IndirectNested.self)
    case .mixed: return make(ContextStrategy.Mixed.self)
    case .dual: return make(ContextStrategy.DualCoordinator.self)
    }
}

private func skus(_ file: URL) throws -> [String] {
    let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Item.self, Memo.self]))
    try coordinator.addPersistentStore(type: .sqlite, at: file)
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    return try context.performAndWait { try context.fetch(FetchRequest<Item>()).map(\.sku).sorted() }
}

@Suite("Connect lifecycles: released right after execute() of an async entity action", .timeLimit(.minutes(5)))
struct ConnectReleaseAfterExecuteTests {
    @Test(arguments: ConnectKind.allCases)
    func releasedRightAfterExecute(_ kind: ConnectKind) async throws {
        for i in 0..<8 {
            let dir = try TemporaryDirectory()
            var connect: (any Connect)? = try probeConnect(kind, dir.url)
            try connect?.start()
            let coordinator = try #require(connect?.persistentStoreCoordinator)
            let proxy = try #require(try connect?.execute(QuickAsyncImport(sku: "s\(i)")))
            weak let weakConnect: AnyObject? = connect
            connect = nil
            let finished = await onOwnThread { proxy.waitUntilFinished(timeout: .now() + 60) }
            #expect(finished, "iteration \(i)")
            var rounds = 0
            while weakConnect != nil || !coordinator.persistentStores.isEmpty, rounds < 1_000_000 {
                await Task.yield()
                rounds += 1
            }
            #expect(weakConnect == nil, "iteration \(i)")
            #expect(coordinator.persistentStores.isEmpty, "iteration \(i)")
            let stored = try skus(dir.file("Probe.sqlite"))
            switch proxy.completionStatus {
            case .successful: #expect(stored == ["s\(i)"], "iteration \(i)")
            case .canceled: #expect(stored == [], "iteration \(i)")
            default: Issue.record("iteration \(i): \(proxy.completionStatus) \(String(describing: proxy.error))")
            }
        }
    }
}

/// An entity action whose save the test holds before its COMMIT (through the writer
/// coordinator's hook), and cancels there.
final class HeldImport: EntityAction {
    typealias ManagedObjectType = Item
    let cancelled = LockedValue(0)
    func execute(context: ActionContext) throws {
        try context.performAndWait {
            for n in 0..<50 {
                let item = Item(context: context)
                item.sku = "held\(n)"
                item.title = "T"
            }
            try context.save()
        }
    }
    func cancel() { cancelled.withLock { $0 += 1 } }
}

@Suite("Connect lifecycles: history kits and importer saves", .timeLimit(.minutes(5)))
struct ConnectKitAndImporterTests {
    @Test func connectReleasedWhileItsKitRoundRuns() async throws {
        let directory = try TemporaryDirectory()
        let holder = LockedValue<KitStack?>(try KitStack(directory, author: "app"))
        var app: KitStack? = holder.withLock { $0 }
        let widget = try KitStack(directory, author: "widget")
        try app?.connect.start()
        var kit: PersistentHistoryTrackingKit? = app?.kit()
        let reader = RoundReader(try #require(kit).engine)
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        await kit?.registerMergeHook { _ in
            entered.signal()
            _ = await waitOffPool(gate)
            return .goOn
        }
        try widget.insert(1)
        #expect(await waitOffPool(entered))
        weak let weakConnect = app?.connect
        weak let weakView = app?.view
        weak let weakCoordinator = app?.coordinator
        // The app lets go of its container while the kit's round is inside its merge hook.
        app = nil
        await onOwnThread { holder.withLock { $0 = nil } }
        #expect(weakConnect == nil)
        gate.signal()
        let round = await reader.next()
        #expect(round != nil)
        // The kit still works (nothing attached) and goes when released.
        try widget.insert(2)
        kit?.stop()
        kit = nil
        var rounds = 0
        while weakCoordinator != nil || weakView != nil, rounds < 100_000 {
            await Task.yield()
            rounds += 1
        }
        #expect(weakView == nil)
        #expect(weakCoordinator == nil)
    }

    @Test(arguments: [ConnectKind.dual, .mixed])
    func actionCancelledInsideItsImporterSave(_ kind: ConnectKind) async throws {
        let dir = try TemporaryDirectory()
        let connect = try probeConnect(kind, dir.url)
        try connect.start()
        let writer: PersistentStoreCoordinator
        if let dual = connect as? GenericConnect<ContextStrategy.DualCoordinator> {
            writer = dual.strategy.writerCoordinator
        } else {
            writer = connect.persistentStoreCoordinator
        }
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        writer.beforeCommitHook.withLock {
            $0 = { _ in
                entered.signal()
                gate.wait()
            }
        }
        let action = HeldImport()
        let proxy = try connect.execute(action)
        #expect(await waitOffPool(entered))
        proxy.cancel()
        #expect(action.cancelled.withLock { $0 } == 1)
        writer.beforeCommitHook.withLock { $0 = nil }
        gate.signal()
        await proxy.finished
        #expect(proxy.completionStatus == .canceled)
        try connect.stop()
        let stored = try skus(dir.file("Probe.sqlite"))
        // All or nothing.
        #expect(stored.count == 50 || stored.isEmpty, "\(stored.count)")
    }
}

@Suite("Dual coordinator: a detach during an importer save", .timeLimit(.minutes(5)))
struct DualCoordinatorDetachDuringSaveTests {
    @Test func detachWhileAnImporterSaveIsBeforeItsCommit() async throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Item.self, Memo.self])
        let connect = GenericConnect<ContextStrategy.DualCoordinator>(name: "Probe", managedObjectModel: model)
        connect.storeLocation = dir.url
        try connect.start()
        let store = try #require(connect.persistentStoreCoordinator.persistentStores.first)
        let writer = connect.strategy.writerCoordinator
        #expect(writer !== connect.persistentStoreCoordinator)
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        writer.beforeCommitHook.withLock {
            $0 = { _ in
                entered.signal()
                gate.wait()
            }
        }
        let importer = connect.strategy.importerContext()
        let saveResult = LockedValue<String?>(nil)
        let saved = DispatchSemaphore(value: 0)
        Thread {
            importer.performAndWait {
                for n in 0..<50 {
                    let item = Item(context: importer)
                    item.sku = "i\(n)"
                }
                do { try importer.save(); saveResult.withLock { $0 = "ok" } } catch { saveResult.withLock { $0 = "\(error)" } }
            }
            saved.signal()
        }.start()
        #expect(await waitOffPool(entered))
        writer.beforeCommitHook.withLock { $0 = nil }
        let detached = DispatchSemaphore(value: 0)
        let detachResult = LockedValue<String?>(nil)
        Thread {
            do { try connect.detach(persistentStore: store); detachResult.withLock { $0 = "ok" } } catch {
                detachResult.withLock { $0 = "\(error)" }
            }
            detached.signal()
        }.start()
        // A new importer context meanwhile (an action starting) must not deadlock.
        let other = DispatchSemaphore(value: 0)
        Thread {
            _ = connect.strategy.importerContext()
            other.signal()
        }.start()
        gate.signal()
        #expect(await waitOffPool(saved, seconds: 60))
        #expect(await waitOffPool(detached, seconds: 60))
        #expect(await waitOffPool(other, seconds: 60))
        #expect(detachResult.withLock { $0 } == "ok")
        let result = saveResult.withLock { $0 }
        let stored = try skus(dir.file("Probe.sqlite"))
        if result == "ok" { #expect(stored.count == 50) } else { #expect(stored.isEmpty, "\(String(describing: result))") }
        #expect(writer.persistentStores.isEmpty)
        // A save after the detach fails typed.
        let code = importer.performAndWait { () -> CoherenceError.Code? in
            Item(context: importer).sku = "after"
            do { try importer.save() } catch { return (error as? CoherenceError)?.code }
            return nil
        }
        #expect(code == .noStoreForEntity || code == .storeNotAttached)
    }
}

@Suite("Stores: one file added and removed concurrently", .timeLimit(.minutes(5)))
struct ConcurrentStoreAttachTests {
    @Test func concurrentAddsOfOneFile() throws {
        for round in 0..<20 {
            let dir = try TemporaryDirectory()
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Item.self, Memo.self]))
            let url = dir.file("same.sqlite")
            let outcomes = LockedValue<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do {
                    try coordinator.addPersistentStore(
                        type: .sqlite, at: url, options: StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true))
                    outcomes.withLock { $0.append("ok") }
                } catch {
                    outcomes.withLock { $0.append("\((error as? CoherenceError).map { "\($0.code)" } ?? "\(error)")") }
                }
            }
            let o = outcomes.withLock { $0 }
            #expect(o.filter { $0 == "ok" }.count == 1, "round \(round): \(o)")
            #expect(o.allSatisfy { $0 == "ok" || $0 == "alreadyAttached" }, "round \(round): \(o)")
            #expect(coordinator.persistentStores.count == 1)
        }
    }

    @Test func addAndRemoveRacingWithSaves() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [Item.self, Memo.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let url = dir.file("churn.sqlite")
        let options = StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        let unexpected = LockedValue<[String]>([])
        let committed = LockedValue<Set<String>>([])
        DispatchQueue.concurrentPerform(iterations: 4) { w in
            if w == 0 {
                for _ in 0..<60 {
                    do {
                        if let s = coordinator.persistentStores.first { try coordinator.remove(s) }
                        try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
                    } catch {
                        let code = (error as? CoherenceError)?.code
                        if code != .alreadyAttached && code != .storeNotAttached {
                            unexpected.withLock { $0.append("churn: \(error)") }
                        }
                    }
                }
                return
            }
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            context.performAndWait {
                for s in 0..<60 {
                    let sku = "w\(w)s\(s)"
                    Item(context: context).sku = sku
                    do {
                        try context.save()
                        committed.withLock { _ = $0.insert(sku) }
                    } catch let error as CoherenceError
                        where [.noStoreForEntity, .storeNotAttached].contains(error.code)
                    {
                        context.rollback()
                    } catch {
                        unexpected.withLock { $0.append("\(error)") }
                        context.rollback()
                    }
                    _ = try? context.fetch(FetchRequest<Item>())
                }
            }
        }
        #expect(unexpected.withLock { $0 }.isEmpty, "\(unexpected.withLock { $0 }.prefix(3))")
        if coordinator.persistentStores.isEmpty { try coordinator.addPersistentStore(type: .sqlite, at: url, options: options) }
        let check = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let stored = try check.performAndWait { Set(try check.fetch(FetchRequest<Item>()).map(\.sku)) }
        #expect(stored == committed.withLock { $0 })
    }
}
