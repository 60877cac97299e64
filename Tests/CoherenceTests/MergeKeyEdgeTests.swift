import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Keyed by a double, a string, an optional string, a UUID, a date; one with a uniqueness constraint.
final class MergeRealKeyed: ManagedObject {
    @Attribute var value: Double = 0
    @Attribute var label: String = ""
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "value"] }
}

final class MergeTextKeyed: ManagedObject {
    @Attribute var code: String = ""
    @Attribute var label: String = ""
    @Attribute var flag: Bool = false
    @Attribute var count: Int = 0
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "code"] }
}

final class MergeOptionalKeyed: ManagedObject {
    @Attribute var code: String?
    @Attribute var label: String = ""
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "code"] }
}

final class MergeUUIDKeyed: ManagedObject {
    @Attribute var uid: UUID = UUID()
    @Attribute var at: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var label: String = ""
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "uid"] }
}

final class MergeDateKeyed: ManagedObject {
    @Attribute var at: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var label: String = ""
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "at"] }
}

final class MergeConstrained: ManagedObject {
    @Attribute var code: String = ""
    @Attribute var category: String = ""
    @Attribute var label: String = ""
    override class var uniquenessConstraints: [[String]] { [["code"]] }
}

@Suite("Merge: key edge cases", .timeLimit(.minutes(5)))
struct MergeKeyEdgeTests {
    func context(_ type: StoreType, _ dir: TemporaryDirectory) throws -> ActionContext {
        let model = try ManagedObjectModel(types: [
            MergeRealKeyed.self, MergeTextKeyed.self, MergeOptionalKeyed.self, MergeUUIDKeyed.self, MergeDateKeyed.self,
            MergeConstrained.self
        ])
        let coordinator = try makeCoordinator(type, in: dir, model: model)
        let template = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return ActionContext(template: template, name: "probe", uniquenessAttributes: ManagedEntities.all(in: model))
    }

    func reader(_ c: ActionContext) -> ManagedObjectContext {
        ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c.persistentStoreCoordinator)
    }

    /// Swift integers for a double key match the stored doubles: merging again changes nothing.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func intsForADoubleKey(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        let input: [[String: any Sendable]] = [["value": 1, "label": "a"], ["value": 2.5, "label": "b"]]
        #expect(try c.merge(objects: input, for: MergeRealKeyed.self) == MergeSummary(inserted: 2, saved: true))
        #expect(try c.merge(objects: input, for: MergeRealKeyed.self) == MergeSummary())
        let r = reader(c)
        let rows = try r.performAndWait { () throws in
            try r.fetch(FetchRequest<MergeRealKeyed>(sortBy: [SortDescriptor(\.value)])).map { "\($0.value) \($0.label)" }
        }
        #expect(rows == ["1.0 a", "2.5 b"])
        #expect(try c.merge(objects: input, for: MergeRealKeyed.self) == MergeSummary())
    }

    /// −0.0 and 0.0 as keys: as many rows as inserted, and merging again changes nothing.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func negativeZeroAndZero(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        let input: [[String: any Sendable]] = [["value": -0.0, "label": "neg"], ["value": 0.0, "label": "pos"]]
        let first = try c.merge(objects: input, for: MergeRealKeyed.self)
        #expect(try c.merge(objects: input, for: MergeRealKeyed.self) == MergeSummary())
        let r = reader(c)
        let n = try r.performAndWait { () throws in try r.count(for: FetchRequest<MergeRealKeyed>()) }
        #expect(n == first.inserted)
    }

    /// Text keys compare by bytes, as the stores do: "é" in NFC and NFD, "A" and "a" are four keys.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func canonicallyEquivalentTextKeys(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        let input: [[String: any Sendable]] = [
            ["code": "\u{E9}", "label": "nfc"], ["code": "e\u{301}", "label": "nfd"], ["code": "A"], ["code": "a"]
        ]
        #expect(try c.merge(objects: input, for: MergeTextKeyed.self) == MergeSummary(inserted: 4, saved: true))
        #expect(try c.merge(objects: input, for: MergeTextKeyed.self) == MergeSummary())
        #expect(
            try c.merge(objects: [["code": "e\u{301}", "label": "nfd2"]], for: MergeTextKeyed.self)
                == MergeSummary(updated: 1, deleted: 3, saved: true))
        let r = reader(c)
        let rows = try r.performAndWait { () throws in
            try r.fetch(FetchRequest<MergeTextKeyed>()).map { Array($0.code.utf8).count.description + $0.label }
        }
        #expect(rows == ["3nfd2"])
    }

    /// A Swift `Bool` for an integer is refused; an `Int32` for an `Int` and a `Bool` for a `Bool` merge.
    @Test func swiftBoolsAndIntsCrossed() throws {
        let dir = try TemporaryDirectory()
        let c = try context(.sqlite, dir)
        #expect(throws: ActionError.self) { try c.merge(objects: [["code": "x", "count": true]], for: MergeTextKeyed.self) }
        #expect(
            try c.merge(objects: [["code": "x", "flag": true, "count": Int32(3)]], for: MergeTextKeyed.self)
                == MergeSummary(inserted: 1, saved: true))
        #expect(try c.merge(objects: [["code": "x", "flag": true, "count": Int32(3)]], for: MergeTextKeyed.self) == MergeSummary())
    }

    /// A stored object without a key is deleted; an incoming null key is a missing key.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func storedNilKeysAreDeleted(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        let r = reader(c)
        try r.performAndWait { () throws in
            let o = MergeOptionalKeyed(context: r)
            o.label = "nil"
            let p = MergeOptionalKeyed(context: r)
            p.code = "k"
            try r.save()
        }
        #expect(
            try c.merge(objects: [["code": "k", "label": "x"], ["code": "z"]], for: MergeOptionalKeyed.self)
                == MergeSummary(inserted: 1, updated: 1, deleted: 1, saved: true))
        // An explicit null for an optional key is a missing key.
        #expect(throws: ActionError.self) { try c.merge(objects: [["code": NSNull()]] as [[String: Any]], for: MergeOptionalKeyed.self) }
    }

    /// UUID and date keys (from `Date`s and ISO-8601 strings) match their stored rows.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func uuidAndDateKeys(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        let u = UUID()
        let input: [[String: any Sendable]] = [["uid": u, "at": "2024-01-02T03:04:05Z", "label": "a"]]
        #expect(try c.merge(objects: input, for: MergeUUIDKeyed.self) == MergeSummary(inserted: 1, saved: true))
        #expect(try c.merge(objects: input, for: MergeUUIDKeyed.self) == MergeSummary())
        let d: [[String: any Sendable]] = [
            ["at": Date(timeIntervalSince1970: 1.25), "label": "a"], ["at": "2024-01-02T03:04:05Z", "label": "b"]
        ]
        #expect(try c.merge(objects: d, for: MergeDateKeyed.self) == MergeSummary(inserted: 2, saved: true))
        #expect(try c.merge(objects: d, for: MergeDateKeyed.self) == MergeSummary())
    }

    /// An object deleted but not saved is not matched: the key is inserted again, one row results.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func pendingDeleteThenMergeSameKey(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        #expect(try c.merge(objects: [["code": "k", "label": "old"], ["code": "j"]], for: MergeTextKeyed.self).inserted == 2)
        let s = try c.performAndWait { () throws in
            let o = try #require(try c.fetch(FetchRequest<MergeTextKeyed>(predicate: #Predicate { $0.code == "k" })).first)
            c.delete(o)
            return try c.merge(objects: [["code": "k", "label": "new"], ["code": "j"]], for: MergeTextKeyed.self)
        }
        #expect(s.inserted == 1)
        let r = reader(c)
        let rows = try r.performAndWait { () throws in
            try r.fetch(FetchRequest<MergeTextKeyed>(sortBy: [SortDescriptor(\.code)])).map { "\($0.code) \($0.label)" }
        }
        #expect(rows == ["j ", "k new"])
    }

    /// An unsaved change of a key takes part: the object matches by its new key.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func pendingKeyChangeTakesPart(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        #expect(try c.merge(objects: [["code": "k", "label": "old"]], for: MergeTextKeyed.self).inserted == 1)
        let s = try c.performAndWait { () throws in
            let o = try #require(try c.fetch(FetchRequest<MergeTextKeyed>()).first)
            o.code = "m"
            return try c.merge(objects: [["code": "m", "label": "new"]], for: MergeTextKeyed.self)
        }
        #expect(s == MergeSummary(updated: 1, saved: true))
        let r = reader(c)
        let rows = try r.performAndWait { () throws in try r.fetch(FetchRequest<MergeTextKeyed>()).map { "\($0.code) \($0.label)" } }
        #expect(rows == ["m new"])
    }

    /// An incoming key stored outside `subsetFilter` is inserted; the uniqueness constraint makes it one row with the incoming values.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func subsetFilterInsertMeetsAConstrainedRowOutside(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        let seed: [[String: any Sendable]] = [["code": "a", "category": "x"], ["code": "b", "category": "y", "label": "old"]]
        #expect(try c.merge(objects: seed, for: MergeConstrained.self).inserted == 2)
        let s = try c.merge(
            objects: [["code": "a", "category": "x"], ["code": "b", "category": "x", "label": "new"]], for: MergeConstrained.self,
            subsetFilter: #Predicate { $0.category == "x" })
        #expect(s.saved)
        let r = reader(c)
        let rows = try r.performAndWait { () throws in
            try r.fetch(FetchRequest<MergeConstrained>(sortBy: [SortDescriptor(\.code)])).map { "\($0.code) \($0.category) \($0.label)" }
        }
        #expect(rows == ["a x ", "b x new"])
    }

    /// An action context on a parent context sees the parent's unsaved inserts, deletes and edits.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func nestedActionContext(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [MergeTextKeyed.self])
        let coordinator = try makeCoordinator(type, in: dir, model: model)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try parent.performAndWait { () throws in
            for code in ["k", "s"] {
                let o = MergeTextKeyed(context: parent)
                o.code = code
                o.label = "stored"
            }
            try parent.save()
            let k = try #require(try parent.fetch(FetchRequest<MergeTextKeyed>(predicate: #Predicate { $0.code == "k" })).first)
            parent.delete(k)
            let p = MergeTextKeyed(context: parent)
            p.code = "p"
            let sObj = try #require(try parent.fetch(FetchRequest<MergeTextKeyed>(predicate: #Predicate { $0.code == "s" })).first)
            sObj.label = "parent edit"
        }
        let template = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        let c = ActionContext(template: template, name: "nested", uniquenessAttributes: ManagedEntities.all(in: model))
        let s = try c.merge(objects: [["code": "k", "label": "new"], ["code": "s", "label": "parent edit"]], for: MergeTextKeyed.self)
        #expect(s == MergeSummary(inserted: 1, updated: 0, deleted: 1, saved: true))
        try parent.performAndWait { () throws in try parent.save() }
        let r = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let rows = try r.performAndWait { () throws in
            try r.fetch(FetchRequest<MergeTextKeyed>(sortBy: [SortDescriptor(\.code)])).map { "\($0.code) \($0.label)" }
        }
        #expect(rows == ["k new", "s parent edit"])
    }
}
