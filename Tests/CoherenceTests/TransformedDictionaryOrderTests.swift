import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

final class TdTagged: ManagedObject {
    @Attribute var code: String = ""
    @Transformed var meta: [String: String] = [:]
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "code"] }
}

/// A `@Transformed` dictionary is stored as JSON: two equal dictionaries built differently
/// iterate in different orders, and must still be the same stored value.
@Suite("Transformed dictionaries: equal values are the same stored value", .timeLimit(.minutes(2)))
struct TransformedDictionaryOrderTests {
    /// The same entries, inserted in opposite orders into tables of different sizes.
    static func equalDictionaries() -> ([String: String], [String: String]) {
        var a: [String: String] = [:]
        for i in 0..<20 { a["k\(i)"] = "v\(i)" }
        var b = [String: String](minimumCapacity: 500)
        for i in (0..<20).reversed() { b["k\(i)"] = "v\(i)" }
        return (a, b)
    }

    /// Merging an equal dictionary changes nothing and saves nothing, and the setter given an
    /// equal dictionary leaves the object unchanged (both wrote the other order's JSON).
    @Test func anEqualDictionaryChangesNothing() throws {
        let (a, b) = Self.equalDictionaries()
        #expect(a == b)
        #expect(Array(a.keys) != Array(b.keys), "the two dictionaries should iterate in different orders")
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [TdTagged.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let template = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let c = ActionContext(template: template, name: "merge", uniquenessAttributes: ManagedEntities.all(in: model))
        #expect(try c.merge(objects: [["code": "x", "meta": a]] as [[String: any Sendable]], for: TdTagged.self).inserted == 1)
        #expect(try c.merge(objects: [["code": "x", "meta": b]] as [[String: any Sendable]], for: TdTagged.self) == MergeSummary())
        let r = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try r.performAndWait { () throws in
            let o = try #require(try r.fetch(FetchRequest<TdTagged>()).first)
            #expect(o.meta == a)
            o.meta = b
            #expect(!r.hasChanges)
        }
    }
}
