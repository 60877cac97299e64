import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

final class NfItem: ManagedObject {
    @Attribute var code: String = ""
    @Attribute var count: Int = 0
    @Attribute var note: String?
    @Attribute var ratio: Float = 0
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "code"] }
}

final class NfFloatKeyed: ManagedObject {
    @Attribute var f: Float = 0
    @Attribute var label: String = ""
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "f"] }
}

/// Incoming values a merge must take as the typed properties would: a Swift optional holding
/// none is JSON's null, and a `Double` for a `Float` attribute is the nearest `Float`.
@Suite("Merge: nil optionals and Float values", .timeLimit(.minutes(5)))
struct MergeNilAndFloatValueTests {
    func context(_ type: StoreType, _ dir: TemporaryDirectory) throws -> ActionContext {
        let model = try ManagedObjectModel(types: [NfItem.self, NfFloatKeyed.self])
        let coordinator = try makeCoordinator(type, in: dir, model: model)
        let template = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return ActionContext(template: template, name: "merge", uniquenessAttributes: ManagedEntities.all(in: model))
    }

    func reader(_ c: ActionContext) -> ManagedObjectContext {
        ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c.persistentStoreCoordinator)
    }

    func json(_ text: String) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
    }

    /// A Swift optional holding none for a required attribute is refused before anything
    /// changes, as JSON's null is (it used to reach the save, which failed validation and left
    /// the merge's changes in the context); for an optional attribute it clears the value.
    @Test func anOptionalHoldingNoneIsANull() throws {
        let dir = try TemporaryDirectory()
        let c = try context(.sqlite, dir)
        #expect(try c.merge(objects: [["code": "x", "count": 3, "note": "n"]], for: NfItem.self).inserted == 1)
        let noCount: Int? = nil
        for input in [[["code": "x", "count": noCount as Any]], [["code": "x", "count": NSNull()]]] as [[[String: Any]]] {
            let error = #expect(throws: ActionError.self) { try c.merge(objects: input, for: NfItem.self) }
            #expect(error?.code == .invalidValue)
            #expect(c.performAndWait { !c.hasChanges })
        }
        let sendable: [[String: any Sendable]] = [["code": "x", "count": noCount as any Sendable]]
        #expect(throws: ActionError.self) { try c.merge(objects: sendable, for: NfItem.self) }
        #expect(c.performAndWait { !c.hasChanges })
        let noNote: String? = nil
        #expect(
            try c.merge(objects: [["code": "x", "count": 3, "note": noNote as any Sendable]], for: NfItem.self)
                == MergeSummary(updated: 1, saved: true))
        let r = reader(c)
        let row = try r.performAndWait { () throws in try r.fetch(FetchRequest<NfItem>()).map { "\($0.count) \($0.note ?? "nil")" } }
        #expect(row == ["3 nil"])
    }

    /// A JSON number for a `Float` attribute is stored as the `Float` the property reads: a
    /// predicate on that value finds it, the setter given it changes nothing, and merging it
    /// again changes nothing (it was stored as the `Double`, and the setter and the merge
    /// rewrote each other's value).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aDoubleForAFloatIsTheNearestFloat(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        let input = try json(#"[{"code":"x","ratio":0.1}]"#)
        #expect(try c.merge(objects: input, for: NfItem.self) == MergeSummary(inserted: 1, saved: true))
        let r = reader(c)
        try r.performAndWait { () throws in
            #expect(try r.count(for: FetchRequest<NfItem>(predicate: #Predicate { $0.ratio == 0.1 })) == 1)
            let o = try #require(try r.fetch(FetchRequest<NfItem>()).first)
            o.ratio = 0.1
            #expect(!r.hasChanges)
            // The dynamic setter rounds a Double alike.
            try o.setValue(0.2, forKey: "ratio")
            try r.save()
            #expect(try r.count(for: FetchRequest<NfItem>(predicate: #Predicate { $0.ratio == 0.2 })) == 1)
        }
        #expect(try c.merge(objects: try json(#"[{"code":"x","ratio":0.2}]"#), for: NfItem.self) == MergeSummary())
        // A finite number past Float's range is refused, not stored as an infinity.
        let tooLarge = #expect(throws: ActionError.self) { try c.merge(objects: [["code": "x", "ratio": 1e39]], for: NfItem.self) }
        #expect(tooLarge?.code == .invalidValue)
        let refused = r.performAndWait { () -> CoherenceError? in
            do {
                try r.fetch(FetchRequest<NfItem>()).first?.setValue(1e39, forKey: "ratio")
                return nil
            } catch { return error as? CoherenceError }
        }
        #expect(refused?.code == .typeMismatch)
    }

    /// A `Float` key stored through the property matches the same number from JSON: the row is
    /// updated in place, not deleted and inserted again under a new ID.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func floatKeysFromJSONMatchTheStoredRows(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try context(type, dir)
        let r = reader(c)
        let id = try r.performAndWait { () throws -> ObjectID in
            let o = NfFloatKeyed(context: r)
            o.f = 0.1
            o.label = "setter"
            try r.save()
            return o.objectID
        }
        let summary = try c.merge(objects: try json(#"[{"f":0.1,"label":"json"}]"#), for: NfFloatKeyed.self)
        #expect(summary == MergeSummary(updated: 1, saved: true))
        let fresh = reader(c)
        let rows = try fresh.performAndWait { () throws in
            try fresh.fetch(FetchRequest<NfFloatKeyed>()).map { "\($0.objectID == id) \($0.f) \($0.label)" }
        }
        #expect(rows == ["true 0.1 json"])
    }
}
