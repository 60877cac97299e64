import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Values and files that another program, or an unusual value, puts in a store's way.
@Suite struct HostileStoreValueTests {
    /// `Decimal.nan` is a value of a decimal attribute (the typed property stores and reads it):
    /// the dynamic setter and batch requests take it too. They refused it as a type mismatch.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func decimalNaNIsAcceptedByTheDynamicAndBatchPaths(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("decimal-nan-\(type)")
        let coordinator = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let sample = Sample(context: context)
            sample.s = "dynamic"
            try sample.setValue(Decimal.nan, forKey: "decimal")
            #expect(sample.decimal?.isNaN == true)
            try context.save()
            _ = try context.execute(BatchInsertRequest<Sample>(objects: [["s": "inserted", "decimal": Decimal.nan]]))
            _ = try context.execute(BatchInsertRequest<Sample>(objects: [["s": "updated", "decimal": Decimal(1)]]))
            _ = try context.execute(
                BatchUpdateRequest<Sample>(predicate: #Predicate { $0.s == "updated" }, propertiesToUpdate: ["decimal": Decimal.nan]))
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let samples = try reader.fetch(FetchRequest<Sample>())
            #expect(Set(samples.map(\.s)) == ["dynamic", "inserted", "updated"])
            for sample in samples { #expect(sample.decimal?.isNaN == true, "\(sample.s): \(String(describing: sample.decimal))") }
        }
    }
}
