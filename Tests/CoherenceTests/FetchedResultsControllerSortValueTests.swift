import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// Sort values the controller compares in memory when it places a changed object: text whose
// bytes and Swift's `<` order apart (canonically equivalent forms, ligatures, emoji, NUL), and
// every sortable attribute type with nil, negative, extreme and special values. Each changed
// object lands where a fetch puts it.

@Suite struct FetchedResultsControllerSortValueTests {
    /// Strings that sort differently by bytes and by Swift's `<`: placed where a fetch puts them.
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func unicodeNamesSortAsAFetchSortsThem(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("frc-sort-unicode-\(type)")
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(type, in: dir))
        let names = ["e\u{301}x", "\u{E9}y", "f", "E", "é", "Z", "a", "\u{1F600}", "ﬁ", "ß", "ss", "\u{0}", ""]
        let request = FetchRequest<Person>(sortBy: [SortDescriptor(\.name), SortDescriptor(\.age)])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
        try context.performAndWait { () throws in
            for (i, n) in names.enumerated() {
                let p = Person(context: context)
                p.name = n
                p.age = i
            }
            try context.save()
            try controller.performFetch()
        }
        for round in 0..<names.count {
            let (shown, fresh) = try context.performAndWait { () throws in
                let people = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age == round }))
                try #require(people.first).name = names[(round * 5 + 3) % names.count] + (round % 2 == 0 ? "" : "x")
                context.processPendingChanges()
                let shown = controller.fetchedObjects.map(\.age)
                try context.save()
                return (shown, try context.fetch(request).map(\.age))
            }
            #expect(shown == fresh, "round \(round)")
        }
    }

    /// Sample's attribute types as sort keys: changed objects placed where a fetch puts them.
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func everyAttributeTypeSortsAsAFetchSortsIt(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("frc-sort-types-\(type)")
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: try makeCoordinator(type, in: dir))
        let decimals: [Decimal?] = [
            nil, 10, 9.5, -1, 100.25, 0, Decimal(sign: .plus, exponent: 30, significand: 1),
            Decimal(sign: .minus, exponent: -3, significand: 1)
        ]
        let dates: [Date?] = [
            nil, Date(timeIntervalSinceReferenceDate: 5), Date(timeIntervalSinceReferenceDate: -5),
            Date(timeIntervalSinceReferenceDate: 1e9), Date(timeIntervalSinceReferenceDate: 0.5), .distantPast, .distantFuture,
            Date(timeIntervalSinceReferenceDate: -0.0)
        ]
        let uuids: [UUID?] = [nil] + (0..<7).map { _ in UUID() }
        let floats: [Float] = [1, -1, .nan, -0.0, 0.0, .infinity, -.infinity, 2.5]
        let ints: [Int?] = [nil, 1, -1, .max, .min, 0, 3, 2]
        let bools: [Bool] = [true, false, true, false, true, true, false, false]
        let optionalStrings: [String?] = [nil, "", "a", "B", "b", "A", nil, "é"]
        let sorts: [(String, [SortDescriptor<Sample>])] = [
            ("decimal", [SortDescriptor(\Sample.decimal), SortDescriptor(\.i)]),
            ("date", [SortDescriptor(\Sample.date, order: .reverse), SortDescriptor(\.i)]),
            ("uuid", [SortDescriptor(\Sample.uuid), SortDescriptor(\.i)]),
            ("float", [SortDescriptor(\Sample.f), SortDescriptor(\.i)]),
            ("int", [SortDescriptor(\Sample.optionalInt, order: .reverse), SortDescriptor(\.i)]),
            ("string?", [SortDescriptor(\Sample.optionalString), SortDescriptor(\.i)]),
            ("string? reverse", [SortDescriptor(\Sample.optionalString, order: .reverse), SortDescriptor(\.i)])
        ]
        try context.performAndWait { () throws in
            for i in 0..<8 {
                let s = Sample(context: context)
                s.i = i
                s.decimal = decimals[i]
                s.date = dates[i]
                s.uuid = uuids[i]
                s.f = floats[i]
                s.optionalInt = ints[i]
                s.b = bools[i]
                s.optionalString = optionalStrings[i]
            }
            try context.save()
        }
        for (label, sort) in sorts {
            let request = FetchRequest<Sample>(sortBy: sort)
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context)
            try context.performAndWait { () throws in try controller.performFetch() }
            for round in 0..<8 {
                let (shown, fresh) = try context.performAndWait { () throws in
                    let s = try #require(try context.fetch(FetchRequest<Sample>(predicate: #Predicate { $0.i == round })).first)
                    let k = (round * 3 + 1) % 8
                    s.decimal = decimals[k]
                    s.date = dates[k]
                    s.uuid = uuids[k]
                    s.f = floats[k]
                    s.optionalInt = ints[k]
                    s.b = bools[k]
                    s.optionalString = optionalStrings[k]
                    context.processPendingChanges()
                    let shown = controller.fetchedObjects.map(\.i)
                    try context.save()
                    return (shown, try context.fetch(request).map(\.i))
                }
                #expect(shown == fresh, "\(label) round \(round)")
            }
        }
    }
}
