import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Fetch options against the objects themselves, in every store: dictionary fetches give the
/// objects' values (NaN, −0.0, decimal NaN, relationships), ID fetches and counts give what the
/// fetch gives under unsaved changes (with limits, offsets, `includesPendingChanges` off, in a
/// child context), and floating-point sorts with NaN follow Predicates.md.
@Suite("Fetch options agree with the fetched objects")
struct FetchOptionsAgreementTests {
    /// Every property of every item, as a dictionary fetch lists it, is the object's value (bit
    /// for bit for floating-point values); nil values are left out.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func dictionariesHoldTheObjectsValues(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { (context: ManagedObjectContext) throws in
            let all = try context.fetch(FetchRequest<OracleItem>(sortBy: [SortDescriptor(\.n)]))
            var request = FetchRequest<OracleItem>(sortBy: [SortDescriptor(\.n)])
            request.propertiesToFetch = [
                "key", "d", "optD", "f", "dec", "dn", "date", "uuid", "data", "s", "t", "u", "optInt", "int", "i16", "flag", "optFlag",
                "owner", "badge", "size"
            ]
            let dictionaries = try context.persistentStoreCoordinator.fetchDictionaries(request)
            #expect(dictionaries.count == all.count)
            for (item, dictionary) in zip(all, dictionaries) {
                func check<V: Equatable>(_ name: String, _ value: V?, same: (V, V) -> Bool = { $0 == $1 }) {
                    guard let value else {
                        #expect(dictionary[name] == nil, "\(type) \(item.key).\(name)")
                        return
                    }
                    let listed = dictionary[name] as? V
                    #expect(
                        listed.map { same($0, value) } == true, "\(type) \(item.key).\(name): \(String(describing: listed)) for \(value)")
                }
                check("key", item.key)
                check("d", item.d) { $0.bitPattern == $1.bitPattern }
                check("optD", item.optD) { $0.bitPattern == $1.bitPattern }
                check("f", item.f) { $0.bitPattern == $1.bitPattern }
                check("dec", item.dec)
                check("dn", item.dn) { $0 == $1 || ($0.isNaN && $1.isNaN) }
                check("date", item.date)
                check("uuid", item.uuid)
                check("data", item.data)
                check("s", item.s)
                check("t", item.t)
                check("u", item.u)
                check("optInt", item.optInt)
                check("int", item.int)
                check("i16", item.i16)
                check("flag", item.flag)
                check("optFlag", item.optFlag)
                check("owner", item.owner?.objectID)
                check("badge", item.badge?.objectID)
                check("size", item.size.rawValue)
            }
        }
    }

    /// `fetchObjectIDs`, `count(for:)` and the typed ID fetch give what `fetch` gives, and
    /// `fetch` gives what `Predicate.evaluate` and the documented order give, with unsaved
    /// changes in the context and in a child of it.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func idsAndCountsFollowTheFetch(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("FetchOptionsIDs")
        let coordinator = try PredicateOracleProbeTests.populatedCoordinator(type, in: dir, twoStores: false)
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try parent.performAndWait { try PredicateOracleProbeTests.makePendingChanges(parent) }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            let all = try child.fetch(FetchRequest<OracleItem>(sortBy: [SortDescriptor(\.n)]))
            all[10].int = 31
            child.delete(all[11])
            let added = OracleItem(context: child)
            added.key = "child"
            added.int = 30
        }
        let predicates: [Predicate<OracleItem>?] = [
            nil, #Predicate { $0.int >= 30 }, #Predicate { $0.owner?.name == "Ann" }, #Predicate { $0.tags.count > 0 }
        ]
        for (label, context) in [("parent", parent), ("child", child)] {
            try context.performAndWait {
                let everything = try context.fetch(FetchRequest<OracleItem>())
                for predicate in predicates {
                    for (limit, offset) in [(0, 0), (3, 0), (0, 5), (4, 2)] {
                        for pending in [true, false] {
                            for sorted in [true, false] {
                                let sort = sorted ? [SortDescriptor(\OracleItem.int, order: .reverse)] : []
                                var request = FetchRequest<OracleItem>(
                                    predicate: predicate, sortBy: sort, fetchLimit: limit, fetchOffset: offset)
                                request.includesPendingChanges = pending
                                let objects = try context.fetch(request)
                                let name = "\(type) \(label) limit \(limit) offset \(offset) pending \(pending) sorted \(sorted)"
                                let ids = try context.fetchObjectIDs(request)
                                if sorted || limit > 0 || offset > 0 {
                                    #expect(ids == objects.map(\.objectID), "\(name)")
                                } else {
                                    #expect(Set(ids) == Set(objects.map(\.objectID)), "\(name)")
                                }
                                #expect(try context.count(for: request) == objects.count, "\(name)")
                                guard pending else { continue }
                                var want = try everything.filter { try predicate?.evaluate($0) ?? true }.sorted { a, b in
                                    if sorted && a.int != b.int { return a.int > b.int }
                                    return ManagedObjectContext.tieOrder(a.objectID, b.objectID)
                                }.map(\.key)
                                want = Array(want.dropFirst(offset).prefix(limit > 0 ? limit : want.count))
                                if sorted || limit > 0 || offset > 0 {
                                    #expect(objects.map(\.key) == want, "\(name)")
                                } else {
                                    #expect(objects.map(\.key).sorted() == want.sorted(), "\(name)")
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Sorts on `Double`, `Double?` and `Float` attributes holding NaN, ±infinity and −0.0:
    /// nil first, −0.0 equal to 0, NaN after every number (NaNs by bit pattern), ties by
    /// primary key then inserted objects (Predicates.md, "Sort descriptors"), limited or not,
    /// with unsaved changes or not.
    @Test(arguments: PostgreSQLTestServer.storeTypes, [false, true])
    func floatingPointSortsPutNaNLast(_ type: StoreType, pending: Bool) throws {
        let dir = try TemporaryDirectory("FetchOptionsNaNSort")
        let coordinator = try PredicateOracleProbeTests.populatedCoordinator(type, in: dir, twoStores: false)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            if pending { try PredicateOracleProbeTests.makePendingChanges(context) }
            let all = try context.fetch(FetchRequest<OracleItem>())
            /// The documented order: nil, numbers (−0.0 as 0), NaN by bits.
            func rank(_ v: Double?) -> (Int, Double, UInt64) {
                guard let v else { return (0, 0, 0) }
                return v.isNaN ? (2, 0, v.bitPattern) : (1, v == 0 ? 0 : v, 0)
            }
            func order(_ a: (Int, Double, UInt64), _ b: (Int, Double, UInt64)) -> Int {
                if a.0 != b.0 { return a.0 < b.0 ? -1 : 1 }
                if a.1 != b.1 { return a.1 < b.1 ? -1 : 1 }
                return a.2 == b.2 ? 0 : (a.2 < b.2 ? -1 : 1)
            }
            let sorts: [(String, SortDescriptor<OracleItem>, (OracleItem) -> Double?)] = [
                ("d", SortDescriptor(\.d), { $0.d }), ("d reverse", SortDescriptor(\.d, order: .reverse), { $0.d }),
                ("optD", SortDescriptor(\.optD), { $0.optD }), ("optD reverse", SortDescriptor(\.optD, order: .reverse), { $0.optD }),
                ("f", SortDescriptor(\.f), { Double($0.f) }), ("f reverse", SortDescriptor(\.f, order: .reverse), { Double($0.f) })
            ]
            for (name, sort, value) in sorts {
                for limit in [0, 5] {
                    let got = try context.fetch(FetchRequest<OracleItem>(sortBy: [sort], fetchLimit: limit)).map(\.key)
                    let want = all.sorted { a, b in
                        let c = order(rank(value(a)), rank(value(b)))
                        if c != 0 { return sort.order == .forward ? c < 0 : c > 0 }
                        return ManagedObjectContext.tieOrder(a.objectID, b.objectID)
                    }.map(\.key)
                    #expect(got == Array(want.prefix(limit > 0 ? limit : want.count)), "\(type) pending \(pending) \(name) limit \(limit)")
                }
            }
        }
    }

    /// Relationship edits made from the other side (a tag gains an item, an owner gains one)
    /// count as changes of the item: its fetches match it on the new relationships.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func editsFromTheOtherSideAreMatched(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("FetchOptionsOtherSide")
        let coordinator = try PredicateOracleProbeTests.populatedCoordinator(type, in: dir, twoStores: false)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let all = try context.fetch(FetchRequest<OracleItem>()).sorted { $0.n < $1.n }
            let tags = try context.fetch(FetchRequest<OracleTag>()).sorted { $0.label < $1.label }
            let owners = try context.fetch(FetchRequest<OracleOwner>()).sorted { $0.name < $1.name }
            tags[0].items.insert(all[0])
            tags[1].items.remove(all[2])
            owners[0].items.insert(all[0])
            let predicates: [(String, Predicate<OracleItem>)] = [
                ("tags.count > 0", #Predicate { $0.tags.count > 0 }), ("tags.isEmpty", #Predicate { $0.tags.isEmpty }),
                ("tags contains blue", #Predicate { $0.tags.contains { $0.label == "blue" } }),
                ("owner == nil", #Predicate { $0.owner == nil }), ("owner?.name == Ann", #Predicate { $0.owner?.name == "Ann" })
            ]
            let everything = try context.fetch(FetchRequest<OracleItem>())
            for (name, predicate) in predicates {
                let want = try everything.filter { try predicate.evaluate($0) }.map(\.key).sorted()
                #expect(try context.fetch(FetchRequest(predicate: predicate)).map(\.key).sorted() == want, "\(type) \(name)")
                #expect(try context.count(for: FetchRequest(predicate: predicate)) == want.count, "\(type) \(name)")
            }
        }
    }
}
