import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Managed by one integer attribute (the merge's integer-key path).
final class ActCounter: ManagedObject {
    @Attribute var number: Int = 0
    @Attribute var label: String = ""
    @Attribute var value: Double = 0
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "number"] }
}

func makeCounterConnect(_ dir: TemporaryDirectory) throws -> ActConnect {
    let model = try ManagedObjectModel(types: [ActCounter.self, ActProduct.self])
    let connect = ActConnect(name: "Counters", managedObjectModel: model)
    connect.storeLocation = dir.url
    return connect
}

func counter(_ n: Int, _ label: String = "L", value: Double = 0) -> [String: any Sendable] {
    ["number": n, "label": label, "value": value]
}

/// The stored counters as "number label value", sorted by number.
func storedCounters(_ connect: ActConnect) async throws -> [String] {
    let context = connect.newBackgroundContext()
    return try await context.perform {
        try context.fetch(FetchRequest<ActCounter>(sortBy: [SortDescriptor(\.number)])).map { "\($0.number) \($0.label) \($0.value)" }
    }
}

@Suite("Action behaviour: merge paths", .timeLimit(.minutes(10)))
struct ActionMergePathTests {
    @Test func integerKeysMergeInAnyOrder() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeCounterConnect(dir)
        try connect.start()
        let seed = (0..<20).map { counter($0) }
        #expect(
            try await runMerge(connect, ActCounter.self) { try $0.merge(objects: Array(seed.reversed()), for: ActCounter.self) }
                == MergeSummary(inserted: 20, updated: 0, deleted: 0, saved: true))
        // 10…19 kept (odd ones changed), 20…29 new, 0…9 gone; negative and large keys sort numerically.
        var incoming = (10..<30).map { counter($0, $0 % 2 == 1 && $0 < 20 ? "odd" : "L") }
        incoming += [counter(-5), counter(Int.max)]
        let permuted = incoming.enumerated().sorted { ($0.offset * 7) % 22 < ($1.offset * 7) % 22 }.map(\.element)
        let summary = try await runMerge(connect, ActCounter.self) { try $0.merge(objects: permuted, for: ActCounter.self) }
        #expect(summary == MergeSummary(inserted: 12, updated: 5, deleted: 10, saved: true))
        let rows = try await storedCounters(connect)
        #expect(rows.count == 22)
        #expect(rows.first == "-5 L 0.0")
        #expect(rows.last == "\(Int.max) L 0.0")
        #expect(rows.filter { $0.contains("odd") } == [11, 13, 15, 17, 19].map { "\($0) odd 0.0" })
    }

    @Test func laterDuplicatesOfAKeyWin() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeCounterConnect(dir)
        try connect.start()
        try await runMerge(connect, ActCounter.self) { try $0.merge(objects: [counter(1), counter(2)], for: ActCounter.self) }
        // 1: stored, three versions (the last has no label: the earlier label stays); 3: new, two versions.
        let incoming: [[String: any Sendable]] = [
            counter(3, "first", value: 1), counter(1, "a", value: 1), counter(1, "b", value: 2),
            ["number": 1, "value": 3.0], counter(3, "second", value: 2), counter(2)
        ]
        let summary = try await runMerge(connect, ActCounter.self) { try $0.merge(objects: incoming, for: ActCounter.self) }
        #expect(summary == MergeSummary(inserted: 1, updated: 1, deleted: 0, saved: true))
        #expect(try await storedCounters(connect) == ["1 b 3.0", "2 L 0.0", "3 second 2.0"])
        // The same input again changes nothing.
        let again = try await runMerge(connect, ActCounter.self) { try $0.merge(objects: incoming, for: ActCounter.self) }
        #expect(again == MergeSummary())
    }

    @Test func unsavedChangesOfTheContextTakePart() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await seedProducts(connect, 3)
        let summary = try await runMerge(connect, ActProduct.self) { context in
            try context.performAndWait {
                let draft = ActProduct(context: context)
                draft.sku = "new"
                draft.title = "draft"
                draft.price = 1
                draft.stock = 1
                draft.category = "a"
                let p1 = try context.fetch(FetchRequest<ActProduct>(predicate: #Predicate { $0.sku == "p00001" }))
                p1.first?.title = "local"
            }
            // "new" matches the unsaved insert (no duplicate); p00001 already has the incoming values.
            return try context.merge(objects: [product("new"), product(sku(1), "local"), product(sku(2))], for: ActProduct.self)
        }
        #expect(summary == MergeSummary(inserted: 0, updated: 1, deleted: 1, saved: true))
        let rows = try await storedProducts(connect)
        #expect(rows.map(\.sku) == ["new", sku(1), sku(2)])
        #expect(rows.map(\.title) == ["T", "local", "T"])
    }

    @Test func registeredObjectsAreMergedInPlace() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await seedProducts(connect, 3)
        let seen = LockedValue<[String]>([])
        try await runMerge(connect, ActProduct.self) { context in
            let held = try context.performAndWait {
                try context.fetch(FetchRequest<ActProduct>(sortBy: [SortDescriptor(\.sku)]))
            }
            let summary = try context.merge(objects: [product(sku(0), "U"), product(sku(1))], for: ActProduct.self)
            context.performAndWait {
                seen.withLock {
                    $0 = held.map { "\($0.sku) \($0.title) \($0.isDeleted || $0.managedObjectContext == nil ? "gone" : "here")" }
                }
                #expect(context.registeredObject(for: held[0].objectID) === held[0])
            }
            return summary
        }
        #expect(seen.withLock { $0 } == ["p00000 U here", "p00001 T here", "p00002 T gone"])
    }

    @Test func conditionIsAskedOnlyForObjectsThatWouldChange() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeCounterConnect(dir)
        try connect.start()
        try await runMerge(connect, ActCounter.self) { try $0.merge(objects: (0..<4).map { counter($0) }, for: ActCounter.self) }
        let asked = LockedValue<[Int]>([])
        let summary = try await runMerge(connect, ActCounter.self) { context in
            try context.merge(
                objects: [counter(0), counter(1, "changed"), counter(2), counter(9)], for: ActCounter.self,
                condition: { c in
                    asked.withLock { $0.append(c.number) }; return c.number != 3
                })
        }
        #expect(summary == MergeSummary(inserted: 1, updated: 1, deleted: 0, saved: true))
        #expect(asked.withLock { $0 } == [1, 3])
        #expect(try await storedCounters(connect) == ["0 L 0.0", "1 changed 0.0", "2 L 0.0", "3 L 0.0", "9 L 0.0"])
    }

    @Test func nonIntegerStoredKeysFallBackToGeneralOrdering() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeCounterConnect(dir)
        try connect.start()
        try await runMerge(connect, ActCounter.self) { try $0.merge(objects: [counter(1), counter(2)], for: ActCounter.self) }
        // A stored key that is not an integer (written through the dynamic API as a real).
        let context = connect.newBackgroundContext()
        try await context.perform {
            let o = try context.insertNewObject(forEntityName: "ActCounter")
            o._setStoredValue(.real(2.5), at: try #require(o.entity.attributesByName["number"]).slot)
            try o.setValue("real", forKey: "label")
            try context.save()
        }
        let summary = try await runMerge(connect, ActCounter.self) {
            try $0.merge(objects: [counter(2, "two"), counter(3)], for: ActCounter.self)
        }
        #expect(summary == MergeSummary(inserted: 1, updated: 1, deleted: 2, saved: true))
        #expect(try await storedCounters(connect) == ["2 two 0.0", "3 L 0.0"])
    }

    @Test func updatedRowsGetTheNextVersionAndOthersKeepTheirs() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await seedProducts(connect, 6)
        let before = try productVersions(connect)
        // Updates in reverse key order: the store writes them in key order, each checked.
        let incoming = (0..<6).reversed().map { product(sku($0), $0 % 2 == 0 ? "even" : "T") }
        let summary = try await runMerge(connect, ActProduct.self) { try $0.merge(objects: incoming, for: ActProduct.self) }
        #expect(summary == MergeSummary(inserted: 0, updated: 3, deleted: 0, saved: true))
        let after = try productVersions(connect)
        for i in 0..<6 {
            #expect(after[sku(i)] == (before[sku(i)] ?? 0) + (i % 2 == 0 ? 1 : 0))
        }
        // Merging again changes the next versions, and the objects saved keep their new versions
        // (a later edit of them saves without a conflict).
        let again = try await runMerge(connect, ActProduct.self) { context in
            let summary = try context.merge(objects: (0..<6).map { product(sku($0), "again") }, for: ActProduct.self)
            try context.performAndWait {
                let first = try context.fetch(FetchRequest<ActProduct>(predicate: #Predicate { $0.sku == "p00000" }))
                first.first?.title = "edited"
                try context.save()
            }
            return summary
        }
        #expect(again.updated == 6)
        let last = try productVersions(connect)
        #expect(last[sku(0)] == (after[sku(0)] ?? 0) + 2)
        #expect(last[sku(1)] == (after[sku(1)] ?? 0) + 1)
        #expect(try await storedProducts(connect).map(\.title) == ["edited"] + Array(repeating: "again", count: 5))
    }

    @Test func entitiesWithManyAttributesMatchEveryName() throws {
        let dir = try TemporaryDirectory()
        // 21 attributes: names past the first 16 are found by dictionary.
        let fields = (0..<20).map { AttributeDescription(name: "f\($0)", type: .string, isOptional: true) }
        let wide = EntityDescription(
            name: "Wide", properties: fields + [AttributeDescription(name: "k", type: .integer64)],
            userInfo: ["uniquenessAttributes": "k"])
        let model = try ManagedObjectModel(entities: [wide])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: dir.url.appendingPathComponent("wide.sqlite"))
        let template = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let context = ActionContext(template: template, name: "Wide", uniquenessAttributes: ManagedEntities.all(in: model))
        let entity = try #require(model.entitiesByName["Wide"])
        let first = try context.merge(objects: [["k": 1, "f0": "a", "f19": "b", "extra": 5], ["k": 2, "f7": "c"]], for: entity)
        #expect(first == MergeSummary(inserted: 2, updated: 0, deleted: 0, saved: true))
        let second = try context.merge(objects: [["k": 1, "f0": "a", "f19": "changed", "extra": 6], ["k": 2, "f7": "c"]], for: entity)
        #expect(second == MergeSummary(inserted: 0, updated: 1, deleted: 0, saved: true))
        #expect(throws: ActionError.self) { try context.merge(objects: [["k": 3, "f18": 42]], for: entity) }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let rows: [String] = try reader.performAndWait {
            try reader.fetch(FetchRequest<ManagedObject>(entityName: "Wide")).map { o in
                "\(try o.value(forKey: "k") ?? 0) \(try o.value(forKey: "f0") ?? "-") \(try o.value(forKey: "f7") ?? "-") \(try o.value(forKey: "f19") ?? "-")"
            }.sorted()
        }
        #expect(rows == ["1 a - changed", "2 - c -"])
    }
}
