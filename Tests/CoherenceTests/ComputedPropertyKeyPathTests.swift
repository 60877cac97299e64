import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

extension OracleItem {
    /// Computed properties that return their stored property unchanged for some values only.
    var clampedInt: Int { max(int, 0) }
    var magnitude: Double { abs(d) }
    var trimmed: String { s.trimmingCharacters(in: .whitespaces) }
    var lowercasedS: String { s.lowercased() }
    var dateOrDistantPast: Date { date ?? .distantPast }
    var optIntOrZero: Int { optInt ?? 0 }
    var tOrEmpty: String { t ?? "" }
    var optIntOrZeroOptional: Int? { optInt ?? 0 }
}

extension OracleOwner {
    /// A computed property that reads the owner's name.
    var lowercasedName: String { name.lowercased() }
    var reversedName: String { String(name.reversed()) }
}

/// A key path to a computed property is refused with `.unsupportedPredicate` (Predicates.md),
/// also when the property returns its stored one unchanged for many values.
@Suite("Key paths to computed properties")
struct ComputedPropertyKeyPathTests {
    /// Computed properties that returned their stored property unchanged for a positive number,
    /// zero, lowercase text or a value (not nil) were translated as that property: `max(int, 0)
    /// == 0` missed the negative ints, `t ?? ""` == "" the nil ones, `s.lowercased()` the
    /// capitals. They are now refused, in predicates and sort descriptors.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func computedPropertiesAreRefused(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { (context: ManagedObjectContext) throws in
            let reference = Date(timeIntervalSinceReferenceDate: 0)
            let predicates: [(String, Predicate<OracleItem>)] = [
                ("max(int, 0)", #Predicate { $0.clampedInt == 0 }), ("abs(d)", #Predicate { $0.magnitude > 1 }),
                ("trimmed", #Predicate { $0.trimmed == "lead" }), ("lowercased", #Predicate { $0.lowercasedS == "abc" }),
                ("date ?? distantPast", #Predicate { $0.dateOrDistantPast < reference }),
                ("optInt ?? 0", #Predicate { $0.optIntOrZero == 0 }), ("t ?? empty", #Predicate { $0.tOrEmpty == "" }),
                ("optInt ?? 0 as Int?", #Predicate { $0.optIntOrZeroOptional == 0 })
            ]
            for (name, predicate) in predicates {
                let error = #expect(throws: CoherenceError.self, "\(name)") { try context.fetch(FetchRequest(predicate: predicate)) }
                #expect(error?.code == .unsupportedPredicate && error?.message.contains("computed") == true, "\(name)")
                #expect(throws: CoherenceError.self, "\(name)") { try context.count(for: FetchRequest(predicate: predicate)) }
                #expect(throws: CoherenceError.self, "\(name)") {
                    try context.execute(BatchUpdateRequest<OracleItem>(predicate: predicate, propertiesToUpdate: ["mark": 1]))
                }
            }
            let sorts: [SortDescriptor<OracleItem>] = [
                SortDescriptor(\.clampedInt), SortDescriptor(\.magnitude), SortDescriptor(\.lowercasedS),
                SortDescriptor(\.dateOrDistantPast), SortDescriptor(\.tOrEmpty), SortDescriptor(\.optIntOrZeroOptional)
            ]
            for sort in sorts {
                let error = #expect(throws: CoherenceError.self) { try context.fetch(FetchRequest(sortBy: [sort])) }
                #expect(error?.code == .unsupportedPredicate)
            }
            #expect(try context.count(for: FetchRequest<OracleItem>()) == OracleData.count)
            // The stored properties themselves still translate, optional or not.
            let stored = #Predicate<OracleItem> { $0.int < 0 || $0.t == nil || $0.date == nil }
            let optional = #Predicate<OracleItem> { $0.optInt == nil || $0.s == " lead" }
            let sorted: [SortDescriptor<OracleItem>] = [SortDescriptor(\.t), SortDescriptor(\.date), SortDescriptor(\.optInt)]
            #expect(try context.count(for: FetchRequest(predicate: stored, sortBy: sorted)) > 0)
            #expect(try context.count(for: FetchRequest(predicate: optional, sortBy: sorted)) > 0)
        }
    }

    /// A sort descriptor or key-path builder reaching a computed property through a to-one
    /// relationship (`\.owner?.reversedName`) was translated as the attribute it reads
    /// (`owner.name`), unchecked: the items came sorted by the owners' names, not reversed.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func computedPropertiesThroughRelationshipsAreRefused(_ type: StoreType) throws {
        try PredicateOracleProbeTests.withItems(type) { (context: ManagedObjectContext) throws in
            let sorts = [SortDescriptor(\OracleItem.owner?.reversedName), SortDescriptor(\OracleItem.owner?.lowercasedName)]
            for sort in sorts {
                let error = #expect(throws: CoherenceError.self) { try context.fetch(FetchRequest(sortBy: [sort])) }
                #expect(error?.code == .unsupportedPredicate && error?.message.contains("owner.name") == true)
            }
            let builder: Predicate<OracleItem> = \.owner?.lowercasedName == "ann"
            let error = #expect(throws: CoherenceError.self) { try context.fetch(FetchRequest(predicate: builder)) }
            #expect(error?.code == .unsupportedPredicate)
            // The attribute itself still sorts and compares.
            let sorted = try context.fetch(FetchRequest<OracleItem>(sortBy: [SortDescriptor(\.owner?.name), SortDescriptor(\.n)]))
            #expect(
                sorted.map { $0.owner?.name ?? "" }
                    == sorted.map { $0.owner?.name ?? "" }.sorted { Array($0.utf8).lexicographicallyPrecedes($1.utf8) })
            let named: Predicate<OracleItem> = \.owner?.name == "Ann"
            #expect(try context.count(for: FetchRequest(predicate: named)) > 0)
        }
    }
}
