import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

private func propagationModel() throws -> ManagedObjectModel { try ManagedObjectModel(types: [Town.self, Person.self, Club.self]) }

private func propagationConnect(_ kind: StrategyKind, _ dir: TemporaryDirectory) throws -> any Connect {
    let model = try propagationModel()
    let connect: any Connect
    switch kind {
    case .direct: connect = GenericConnect<ContextStrategy.Direct>(name: "Propagation", managedObjectModel: model)
    case .directIndependent: connect = GenericConnect<ContextStrategy.DirectIndependent>(name: "Propagation", managedObjectModel: model)
    case .indirectNested: connect = GenericConnect<ContextStrategy.IndirectNested>(name: "Propagation", managedObjectModel: model)
    case .mixed: connect = GenericConnect<ContextStrategy.Mixed>(name: "Propagation", managedObjectModel: model)
    }
    try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration())
    try connect.start()
    return connect
}

/// Waits until background saves made so far have reached the view context (and the root
/// context's writes are done).
private func settlePropagation(_ connect: any Connect) async throws {
    for _ in 0..<3 {
        switch connect {
        case let c as GenericConnect<ContextStrategy.IndirectNested>:
            try await c.waitForPendingSaves()
            await c.strategy.rootContext.perform {}
        case let c as GenericConnect<ContextStrategy.Mixed>:
            await c.strategy.rootContext.perform {}
            try await c.waitForPendingSaves()
        default: break
        }
        await connect.viewContext.perform {}
    }
}

// Propagation between a container's contexts, conflicting saves, fetches across stores and many
// actions at once: promises of the stack and actions guides.

@Suite("Container: propagation and conflicts between contexts", .timeLimit(.minutes(2)))
struct ContainerPropagationTests {
    /// A background context moves a person from one town to another: the view context's loaded
    /// to-many relationships follow.
    @Test(arguments: [StrategyKind.direct, .indirectNested, .mixed])
    func relationshipMovesReachTheView(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let connect = try propagationConnect(kind, dir)
        let bg = connect.newBackgroundContext()
        try await bg.perform {
            let oslo = Town(context: bg)
            oslo.name = "Oslo"
            let bergen = Town(context: bg)
            bergen.name = "Bergen"
            let ada = Person(context: bg)
            ada.name = "Ada"
            ada.town = oslo
            try bg.save()
        }
        try await settlePropagation(connect)
        let view = connect.viewContext
        let before = try await view.perform {
            try view.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)])).map { "\($0.name):\($0.people.map(\.name).sorted())" }
        }
        #expect(before == ["Bergen:[]", "Oslo:[\"Ada\"]"])
        try await bg.perform {
            let ada = try #require(try bg.fetch(FetchRequest<Person>()).first)
            let bergen = try #require(try bg.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "Bergen" })).first)
            ada.town = bergen
            try bg.save()
        }
        try await settlePropagation(connect)
        let after = try await view.perform {
            try view.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)])).map { "\($0.name):\($0.people.map(\.name).sorted())" }
        }
        #expect(after == ["Bergen:[\"Ada\"]", "Oslo:[]"])
        let adaTown = try await view.perform { try view.fetch(FetchRequest<Person>()).first?.town?.name }
        #expect(adaTown == "Bergen")
        try connect.stop()
    }

    /// The view context holds an unsaved edit of a property a background save then changes:
    /// after the merge the view context keeps its edit, and saving it writes it (no conflict).
    @Test(arguments: [StrategyKind.direct, .mixed])
    func unsavedViewEditSurvivesABackgroundSaveAndWins(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let connect = try propagationConnect(kind, dir)
        let bg = connect.newBackgroundContext()
        try await bg.perform {
            let p = Person(context: bg)
            p.name = "Ada"
            p.age = 1
            p.score = 1
            try bg.save()
        }
        try await settlePropagation(connect)
        let view = connect.viewContext
        try await view.perform {
            let p = try #require(try view.fetch(FetchRequest<Person>()).first)
            p.age = 5
        }
        try await bg.perform {
            let p = try #require(try bg.fetch(FetchRequest<Person>()).first)
            p.age = 2
            p.score = 2
            try bg.save()
        }
        try await settlePropagation(connect)
        let seen = try await view.perform { () -> String in
            let p = try #require(try view.fetch(FetchRequest<Person>()).first)
            return "\(p.age) \(p.score)"
        }
        #expect(seen == "5 2.0")
        let err: (any Error)? = await view.perform {
            do { try view.save(); return nil } catch { return error }
        }
        #expect(err == nil)
        try await settlePropagation(connect)
        let stored = try connect.persistentStoreCoordinator.fetchDictionaries(FetchRequest<Person>())
        #expect(stored.first?["age"] as? Int == 5)
        #expect(stored.first?["score"] as? Double == 2)
        try connect.stop()
    }

    /// A background context deletes an object the view context edited without saving: the
    /// view context's save then neither fails nor brings the row back.
    @Test(arguments: [StrategyKind.direct, .mixed])
    func backgroundDeleteOfAnObjectTheViewEdited(_ kind: StrategyKind) async throws {
        let dir = try TemporaryDirectory()
        let connect = try propagationConnect(kind, dir)
        let bg = connect.newBackgroundContext()
        try await bg.perform {
            let p = Person(context: bg)
            p.name = "Ada"
            try bg.save()
        }
        try await settlePropagation(connect)
        let view = connect.viewContext
        try await view.perform {
            let p = try #require(try view.fetch(FetchRequest<Person>()).first)
            p.age = 5
        }
        try await bg.perform {
            let p = try #require(try bg.fetch(FetchRequest<Person>()).first)
            bg.delete(p)
            try bg.save()
        }
        try await settlePropagation(connect)
        let err: (any Error)? = await view.perform {
            do { try view.save(); return nil } catch { return error }
        }
        try await settlePropagation(connect)
        let stored = try connect.persistentStoreCoordinator.fetchDictionaries(FetchRequest<Person>())
        #expect(stored.isEmpty, "\(stored) \(String(describing: err))")
        try connect.stop()
    }

    /// Fetching across two stores holding one entity: sort, offset and limit apply to the
    /// union, and counts agree.
    @Test func fetchAcrossTwoStoresSortsAndPagesTheUnion() async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<ContextStrategy.Direct>(name: "Propagation", managedObjectModel: try propagationModel())
        let a = try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(fileName: "a.sqlite"))
        let b = try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(fileName: "b.sqlite"))
        try connect.start()
        let bg = connect.newBackgroundContext()
        try await bg.perform {
            for (i, name) in ["a", "b", "c", "d", "e", "f", "g", "h"].enumerated() {
                let p = Person(context: bg)
                p.name = name
                p.age = i
                try bg.assign(p, to: i % 2 == 0 ? a : b)
            }
            try bg.save()
        }
        let view = connect.viewContext
        let (page, count, ids) = try await view.perform {
            var r = FetchRequest<Person>(sortBy: [SortDescriptor(\.name, order: .reverse)])
            r.fetchOffset = 2
            r.fetchLimit = 3
            let page = try view.fetch(r).map(\.name)
            let count = try view.count(for: r)
            var all = FetchRequest<Person>(predicate: #Predicate { $0.age >= 3 })
            all.fetchLimit = 10
            let ids = try view.fetch(all).count
            return (page, count, ids)
        }
        #expect(page == ["f", "e", "d"])
        #expect(count == 3)
        #expect(ids == 5)
        try connect.stop()
    }
}

final class ManyEventsLog: Sendable {
    let value = LockedValue<[ObjectIdentifier: [String]]>([:])
    func add(_ p: ActionProxy, _ s: String) { value.withLock { $0[ObjectIdentifier(p), default: []].append(s) } }
}

final class ManyGeneric: GenericAction {
    let fail: Bool
    init(fail: Bool) { self.fail = fail }
    func execute() throws { if fail { throw CoherenceError(.invalidRequest, "planned failure") } }
}

final class ManyAsync: AsyncGenericAction {
    func execute() async throws { await Task.yield() }
}

final class ManyInsertProduct: EntityAction {
    typealias ManagedObjectType = ActProduct
    let sku: String
    let ran = LockedValue(false)
    init(sku: String) { self.sku = sku }
    func execute(context: ActionContext) throws {
        ran.withLock { $0 = true }
        try context.performAndWait {
            let p = ActProduct(context: context)
            p.sku = sku
            try context.save()
        }
    }
}

@Suite("Actions: many at once", .timeLimit(.minutes(2)))
struct ManyActionsTests {
    /// 150 actions of every kind, some throwing, some cancelled at once: each proxy posts one
    /// start and one finish (notifications and `actionEvents`, in that order), its completion
    /// block runs once with the proxy finished, and exactly the entity actions that ran saved.
    @Test func manyActionsEachReportOnceInOrder() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir, name: "Many")
        try connect.start()
        let events = connect.actionEvents
        let completions = ManyEventsLog()
        let notes = ManyEventsLog()
        let t1 = NotificationCenter.default.addObserver(forName: .actionDidStartExecuting, object: connect, queue: nil) { n in
            if let p = n.userInfo?[ActionProxy.userInfoKey] as? ActionProxy { notes.add(p, "start") }
        }
        let t2 = NotificationCenter.default.addObserver(forName: .actionDidFinishExecuting, object: connect, queue: nil) { n in
            if let p = n.userInfo?[ActionProxy.userInfoKey] as? ActionProxy { notes.add(p, "finish") }
        }
        defer {
            NotificationCenter.default.removeObserver(t1)
            NotificationCenter.default.removeObserver(t2)
        }
        var proxies: [ActionProxy] = []
        var inserts: [ManyInsertProduct] = []
        for i in 0..<150 {
            let completion: @Sendable (ActionProxy) -> Void = { p in completions.add(p, "\(p.state)") }
            let proxy: ActionProxy
            switch i % 3 {
            case 0: proxy = try connect.execute(ManyGeneric(fail: i % 2 == 0), completionBlock: completion)
            case 1: proxy = try connect.execute(ManyAsync(), completionBlock: completion)
            default:
                let a = ManyInsertProduct(sku: "p\(i)")
                inserts.append(a)
                proxy = try connect.execute(a, completionBlock: completion)
            }
            if i % 5 == 0 { proxy.cancel() }
            proxies.append(proxy)
        }
        for p in proxies { await p.finished }
        var seen: [ObjectIdentifier: [ActionEvent.Kind]] = [:]
        var finishes = 0
        for await e in events {
            seen[ObjectIdentifier(e.proxy), default: []].append(e.kind)
            if e.kind == .didFinishExecuting { finishes += 1 }
            if finishes == proxies.count { break }
        }
        for p in proxies {
            #expect(completions.value.withLock { $0[ObjectIdentifier(p)] } == ["finished"])
            #expect(notes.value.withLock { $0[ObjectIdentifier(p)] } == ["start", "finish"])
            #expect(seen[ObjectIdentifier(p)] == [.didStartExecuting, .didFinishExecuting])
            #expect(p.state == .finished && p.completionStatus != .unknown)
        }
        let ran = Set(inserts.filter { $0.ran.withLock { $0 } }.map(\.sku))
        try await connect.waitForPendingSaves()
        let stored = Set(
            try connect.persistentStoreCoordinator.fetchDictionaries(FetchRequest<ActProduct>()).compactMap { $0["sku"] as? String })
        #expect(stored == ran)
        try connect.stop()
    }
}

@Suite("Dual coordinator: the view context and an importer edit one object", .timeLimit(.minutes(2)))
struct DualCoordinatorConflictTests {
    /// The view context and a stale importer each change other properties of one object, then
    /// the view context again: nothing is lost, and both coordinators read the final row.
    @Test func viewAndImporterEditTheSameObject() async throws {
        let dir = try TemporaryDirectory()
        let container = try DualCoordinatorContainer(managedObjectModel: try propagationModel(), storeURL: dir.file("s.sqlite"))
        let importer = container.importerContext()
        try await importer.perform {
            let p = Person(context: importer)
            p.name = "Ada"
            try importer.save()
        }
        let view = container.viewContext
        // Both load it.
        try await view.perform { _ = try view.fetch(FetchRequest<Person>()).first?.age }
        let i2 = container.importerContext()
        try await i2.perform { _ = try i2.fetch(FetchRequest<Person>()).first?.age }
        // The view saves age; the importer (stale) saves score.
        try await view.perform {
            try #require(try view.fetch(FetchRequest<Person>()).first).age = 5
            try view.save()
        }
        let e1: (any Error)? = await i2.perform {
            do {
                try #require(try i2.fetch(FetchRequest<Person>()).first).score = 2
                try i2.save()
                return nil
            } catch { return error }
        }
        #expect(e1 == nil)
        // The view context (stale only if the merge has not run) saves name.
        try await view.perform {}
        try await view.perform {
            try #require(try view.fetch(FetchRequest<Person>()).first).name = "Bea"
            try view.save()
        }
        let check = PersistentStoreCoordinator(managedObjectModel: try propagationModel())
        try check.addPersistentStore(type: .sqlite, at: dir.file("s.sqlite"))
        let row = try #require(try check.fetchDictionaries(FetchRequest<Person>()).first)
        #expect(row["name"] as? String == "Bea")
        #expect(row["age"] as? Int == 5)
        #expect(row["score"] as? Double == 2)
        // A fresh importer and the view both read the final row.
        let i3 = container.importerContext()
        let fromImporter = try await i3.perform { () -> String in
            let p = try #require(try i3.fetch(FetchRequest<Person>()).first)
            return "\(p.name) \(p.age) \(p.score)"
        }
        #expect(fromImporter == "Bea 5 2.0")
        let fromView = try await view.perform { () -> String in
            let p = try #require(try view.fetch(FetchRequest<Person>()).first)
            return "\(p.name) \(p.age) \(p.score)"
        }
        #expect(fromView == "Bea 5 2.0")
    }
}
