import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A context's fetches, counts and ID fetches with unsaved changes (inserts, updates, deletes,
/// relationship and many-to-many edits; in a child context, its parent's too) answer as the same
/// requests do once the changes are saved: sorts over nil, text, −0.0, NaN and infinities,
/// decimals and dates, limits and offsets, predicates through relationships.
@Suite("Fetches with unsaved changes answer as after the save")
struct PendingChangesFetchTests {
    /// Requests over the saved people: sorts, limits and offsets, predicates.
    static func requests() -> [(String, FetchRequest<Person>)] {
        var r: [(String, FetchRequest<Person>)] = []
        r.append(("byName", FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])))
        r.append(("byEmail", FetchRequest<Person>(sortBy: [SortDescriptor(\.email)])))
        r.append(("byEmailDesc", FetchRequest<Person>(sortBy: [SortDescriptor(\.email, order: .reverse)])))
        r.append(("byAgeLimit", FetchRequest<Person>(sortBy: [SortDescriptor(\.age)], fetchLimit: 3, fetchOffset: 1)))
        r.append(("byTownName", FetchRequest<Person>(sortBy: [SortDescriptor(\.town?.name), SortDescriptor(\.name)])))
        r.append(("noSortLimit", FetchRequest<Person>(fetchLimit: 4, fetchOffset: 2)))
        r.append(("pred", FetchRequest<Person>(predicate: #Predicate { $0.age >= 2 }, sortBy: [SortDescriptor(\.name)])))
        r.append(
            ("predTown", FetchRequest<Person>(predicate: #Predicate { $0.town?.name == "Oslo" }, sortBy: [SortDescriptor(\.name)])))
        r.append(("emailNil", FetchRequest<Person>(predicate: #Predicate { $0.email == nil }, sortBy: [SortDescriptor(\.name)])))
        r.append(("clubs", FetchRequest<Person>(predicate: #Predicate { !$0.clubs.isEmpty }, sortBy: [SortDescriptor(\.name)])))
        r.append(
            (
                "clubs2",
                FetchRequest<Person>(predicate: #Predicate { $0.clubs.contains { $0.title == "Go" } }, sortBy: [SortDescriptor(\.name)])
            ))
        return r
    }

    /// In a root context.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func pendingEqualsSaved(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try SavedPeople.context(dir, type)
        try context.performAndWait {
            let people = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            let towns = try context.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)]))
            // Changes: insert two, update two, delete one.
            let n1 = Person(context: context)
            n1.name = "apple"
            n1.email = nil
            n1.age = 2
            n1.town = towns[1]
            let n2 = Person(context: context)
            n2.name = "Aardvark"
            n2.email = "b"
            n2.age = 0
            people[0].email = nil
            people[0].age = 4
            people[2].town = towns[0]
            people[2].name = "banana"
            context.delete(people[3])
            let go = Club(context: context)
            go.title = "Go"
            people[1].clubs.insert(go)
            n2.clubs.insert(go)
            var before: [String: [String]] = [:]
            var counts: [String: Int] = [:]
            var ids: [String: Int] = [:]
            for (k, r) in Self.requests() {
                before[k] = try context.fetch(r).map { "\($0.name)|\($0.email ?? "nil")|\($0.age)" }
                counts[k] = try context.count(for: r)
                ids[k] = try context.fetchObjectIDs(r).count
            }
            try context.save()
            let fresh = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
            try fresh.performAndWait {
                for (k, r) in Self.requests() {
                    let after = try fresh.fetch(r).map { "\($0.name)|\($0.email ?? "nil")|\($0.age)" }
                    #expect(before[k] == after, "\(k)")
                    #expect(counts[k] == after.count, "count \(k)")
                    #expect(ids[k] == after.count, "ids \(k)")
                    #expect(try fresh.count(for: r) == after.count, "saved count \(k)")
                }
            }
        }
    }

    /// In a child context, with its own unsaved changes and its parent's.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func childPendingEqualsSaved(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let parent = try SavedPeople.context(dir, type)
        try parent.performAndWait {
            let people = try parent.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            let p = Person(context: parent)
            p.name = "parentNew"
            p.age = 3
            people[1].age = 4
            people[1].email = "zz"
            parent.delete(people[4])
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        try child.performAndWait {
            let people = try child.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            let towns = try child.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)]))
            let newTown = Town(context: child)
            newTown.name = "Aachen"
            let n1 = Person(context: child)
            n1.name = "childNew"
            n1.email = nil
            n1.age = 1
            n1.town = newTown
            people[0].town = newTown
            people[2].age = 0
            people[3].town = towns[1]
            child.delete(people[5])
            let go = Club(context: child)
            go.title = "Go"
            people[2].clubs.insert(go)
            n1.clubs.insert(go)
            var before: [String: [String]] = [:]
            var counts: [String: Int] = [:]
            for (k, r) in Self.requests() {
                before[k] = try child.fetch(r).map { "\($0.name)|\($0.email ?? "nil")|\($0.age)" }
                counts[k] = try child.count(for: r)
            }
            try child.save()
            try parent.performAndWait { try parent.save() }
            let fresh = try SavedPeople.reader(parent)
            try fresh.performAndWait {
                for (k, r) in Self.requests() {
                    let after = try fresh.fetch(r).map { "\($0.name)|\($0.email ?? "nil")|\($0.age)" }
                    #expect(before[k] == after, "\(k)")
                    #expect(counts[k] == after.count, "count \(k)")
                }
            }
        }
    }

    /// Requests over samples of every attribute type.
    static func sampleRequests() -> [(String, FetchRequest<Sample>)] {
        var r: [(String, FetchRequest<Sample>)] = []
        r.append(("d", FetchRequest<Sample>(sortBy: [SortDescriptor(\.d), SortDescriptor(\.s)])))
        r.append(("f", FetchRequest<Sample>(sortBy: [SortDescriptor(\.f, order: .reverse), SortDescriptor(\.s)])))
        r.append(("date", FetchRequest<Sample>(sortBy: [SortDescriptor(\.date), SortDescriptor(\.s)])))
        r.append(("decimal", FetchRequest<Sample>(sortBy: [SortDescriptor(\.decimal), SortDescriptor(\.s)])))
        r.append(("oi", FetchRequest<Sample>(sortBy: [SortDescriptor(\.optionalInt, order: .reverse), SortDescriptor(\.s)])))
        r.append(("os", FetchRequest<Sample>(sortBy: [SortDescriptor(\.optionalString), SortDescriptor(\.s)])))
        r.append(("i64", FetchRequest<Sample>(sortBy: [SortDescriptor(\.i64), SortDescriptor(\.s)])))
        r.append(("s", FetchRequest<Sample>(sortBy: [SortDescriptor(\.s)])))
        r.append(("pd", FetchRequest<Sample>(predicate: #Predicate { $0.d > 0 }, sortBy: [SortDescriptor(\.s)])))
        r.append(("pd2", FetchRequest<Sample>(predicate: #Predicate { $0.d == 0 }, sortBy: [SortDescriptor(\.s)])))
        r.append(("pb", FetchRequest<Sample>(predicate: #Predicate { $0.b }, sortBy: [SortDescriptor(\.s)])))
        r.append(("poi", FetchRequest<Sample>(predicate: #Predicate { $0.optionalInt != 3 }, sortBy: [SortDescriptor(\.s)])))
        r.append(
            (
                "pos",
                FetchRequest<Sample>(
                    predicate: #Predicate { $0.optionalString != nil && $0.optionalString! > "b" }, sortBy: [SortDescriptor(\.s)])
            ))
        r.append(("pos2", FetchRequest<Sample>(predicate: #Predicate { !($0.optionalString! > "b") }, sortBy: [SortDescriptor(\.s)])))
        r.append(
            (
                "pcontains",
                FetchRequest<Sample>(predicate: #Predicate { $0.s.localizedStandardContains("e") }, sortBy: [SortDescriptor(\.s)])
            ))
        r.append(("pi", FetchRequest<Sample>(predicate: #Predicate { $0.i * 2 > 3 || $0.i32 < 0 }, sortBy: [SortDescriptor(\.s)])))
        let epoch = Date(timeIntervalSince1970: 0)
        r.append(
            ("pdate", FetchRequest<Sample>(predicate: #Predicate { $0.date != nil && $0.date! > epoch }, sortBy: [SortDescriptor(\.s)])))
        return r
    }

    /// Values of every attribute type, special floating-point values included.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func samplePendingEqualsSaved(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try makeContext(dir, type: type)
        let values: [(Double, Float, Bool, Double?, String?, Int?, String?, Int64, Int)] = [
            (1.5, 2, true, 0, "1.10", 3, "b", 5, 1),
            (-0.0, -1, false, -100, "-2", nil, "B", -5, 2),
            (0.0, .infinity, true, nil, nil, 3, nil, 0, 0),
            (.infinity, 0, false, 1e9, "1.1", 7, "é", Int64.max, -3),
            (-.infinity, -0.0, true, -1e-9, "100", -1, "e\u{301}", Int64.min, 5),
            (.nan, .nan, false, 5, "0.000", 0, "", 1, 2)
        ]
        func fill(_ x: Sample, _ v: (Double, Float, Bool, Double?, String?, Int?, String?, Int64, Int), _ n: String) {
            x.s = n
            x.d = v.0
            x.f = v.1
            x.b = v.2
            x.date = v.3.map { Date(timeIntervalSince1970: $0) }
            x.decimal = v.4.flatMap { Decimal(string: $0) }
            x.optionalInt = v.5
            x.optionalString = v.6
            x.i64 = v.7
            x.i = v.8
            x.i32 = Int32(v.8 - 2)
        }
        try context.performAndWait {
            for (n, v) in values.enumerated() { fill(Sample(context: context), v, "s\(n)") }
            try context.save()
            let saved = try context.fetch(FetchRequest<Sample>(sortBy: [SortDescriptor(\.s)]))
            for (n, v) in values.reversed().enumerated() where n % 2 == 0 { fill(Sample(context: context), v, "n\(n)") }
            for (n, v) in values.reversed().enumerated() where n % 2 == 1 { fill(saved[n], v, "u\(n)") }
            context.delete(saved[4])
            var before: [String: [String]] = [:]
            var counts: [String: Int] = [:]
            for (k, r) in Self.sampleRequests() {
                before[k] = try context.fetch(r).map(\.s)
                counts[k] = try context.count(for: r)
            }
            try context.save()
            let fresh = try SavedPeople.reader(context)
            try fresh.performAndWait {
                for (k, r) in Self.sampleRequests() {
                    let after = try fresh.fetch(r).map(\.s)
                    #expect(before[k] == after, "\(k)")
                    #expect(counts[k] == after.count, "count \(k)")
                }
            }
        }
    }
}

extension PendingChangesFetchTests {
    /// A request with a limit or offset but no sort descriptor counts in primary-key order (then
    /// inserted objects), with unsaved changes too. It counted in the order of the store's
    /// answer, read without the limit (no order at all on PostgreSQL), with changed objects
    /// that match only now after the inserted ones: `fetchLimit: 2` skipped the changed item.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func unsortedLimitWithPendingChangesCountsInKeyOrder(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("UnsortedLimitPending")
        let coordinator = try PredicateOracleProbeTests.populatedCoordinator(type, in: dir, twoStores: false)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let atLeast30 = #Predicate<OracleItem> { $0.int >= 30 }
        try context.performAndWait {
            let all = try context.fetch(FetchRequest<OracleItem>()).sorted { $0.n < $1.n }
            // i03 (Int.max), i05 (42), i08 (100), i09 (30), i10 (30), i16 (99), i17 (1000) match.
            let added = OracleItem(context: context)
            added.key = "new"
            added.int = 40
            all[2].int = 31  // i02 matches only now
            all[8].int = 0  // i08 no longer matches
            let want = ["i02", "i03", "i05", "i09", "i10", "i16", "i17", "new"]
            for (limit, offset) in [(2, 0), (3, 1), (0, 6), (100, 0)] {
                let request = FetchRequest<OracleItem>(predicate: atLeast30, fetchLimit: limit, fetchOffset: offset)
                let expected = Array(want.dropFirst(offset).prefix(limit > 0 ? limit : want.count))
                let got = try context.fetch(request).map(\.key)
                #expect(got == expected, "\(type) limit \(limit) offset \(offset)")
                #expect(try context.fetchObjectIDs(request) == context.fetch(request).map(\.objectID))
                #expect(try context.count(for: request) == expected.count)
            }
        }
        // A child context of this one counts the same way, over its own changes too.
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: context, name: "child")
        try child.performAndWait {
            let i04 = try #require(try child.fetch(FetchRequest<OracleItem>(predicate: #Predicate { $0.key == "i04" })).first)
            i04.int = 50
            let request = FetchRequest<OracleItem>(predicate: atLeast30, fetchLimit: 3, fetchOffset: 1)
            #expect(try child.fetch(request).map(\.key) == ["i03", "i04", "i05"], "\(type) child")
        }
    }
}
