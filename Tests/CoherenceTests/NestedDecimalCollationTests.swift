import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherenceStore

/// An item with a decimal, for comparisons whose operand holds a decimal test.
final class CollationItem: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var dn: Decimal?
}

// SQLite compares two text values in the collation of the first `COLLATE` it finds in the left
// operand, one nested in a ternary's condition included: a ternary that tests a decimal with
// `==` (the column's collation, NaN last) made the comparison around it use that collation.
@Suite("Comparisons around a decimal test")
struct NestedDecimalCollationTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aTernaryThatTestsADecimalDoesNotChooseTheComparisonsCollation(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let c = try makeCoordinator(type, in: dir, model: try ManagedObjectModel(types: [CollationItem.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            let values: [(String, Decimal?)] = [("a", .nan), ("b", 0), ("10", 1), ("d", -1), ("e", 5), ("f", nil), ("1.0", 2)]
            for (name, value) in values {
                let o = CollationItem(context: context)
                o.name = name
                o.dn = value
            }
            try context.save()
            let all = try context.fetch(FetchRequest<CollationItem>())
            let zero = Decimal(0), one = Decimal(1), five = Decimal(5)
            let cases: [(String, Predicate<CollationItem>)] = [
                // NaN sorts first in `<`, last in the column's collation `==` uses.
                ("decimal <", #Predicate { $0.dn != nil && ($0.dn == zero ? one : $0.dn!) < one }),
                ("decimal range", #Predicate { $0.dn != nil && (zero...one).contains($0.dn == five ? one : $0.dn!) }),
                ("decimal in range", #Predicate { $0.dn != nil && ($0.dn == five ? one : $0.dn!) >= zero }),
                // Text compares by code points, not as numbers.
                ("text <", #Predicate { ($0.dn == zero ? "10" : $0.name) < "9" }),
                ("text ==", #Predicate { ($0.dn == zero ? "1.0" : $0.name) == "1" }),
                ("text range", #Predicate { ("0"..."9").contains($0.dn == zero ? "10" : $0.name) }),
                ("text in", #Predicate { ["1"].contains($0.dn == zero ? "1.0" : $0.name) })
            ]
            for (name, p) in cases {
                let expected = try all.filter { try p.evaluate($0) }.map(\.name).sorted()
                let found = try context.fetch(FetchRequest(predicate: p)).map(\.name).sorted()
                #expect(found == expected, "\(name)")
            }
        }
    }
}
