import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Managed by an integer; a date taken from JSON strings.
final class MergeDatedItem: ManagedObject {
    @Attribute var id: Int = 0
    @Attribute var at: Date?
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "id"] }
}

@Suite("Merge: ISO-8601 date strings", .timeLimit(.minutes(5)))
struct MergeDateStringTests {
    /// ISO-8601 strings with fractional seconds (JavaScript's `toISOString()`, microseconds from
    /// a database) are taken to the fraction, not refused; the same payload again changes nothing.
    @Test func fractionalSecondsAreTakenExactly() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [MergeDatedItem.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let template = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let context = ActionContext(template: template, name: "dates", uniquenessAttributes: ManagedEntities.all(in: model))
        let payload = try JSONPayload(
            #"[{"id": 1, "at": "2024-01-02T03:04:05Z"}, {"id": 2, "at": "2024-01-02T03:04:05.123Z"}, {"id": 3, "at": "2024-01-02T05:04:05.123456+02:00"}, {"id": 4, "at": "2024-01-02T03:04:05,5Z"}]"#
        )
        #expect(try context.merge(objects: payload.objects, for: MergeDatedItem.self) == MergeSummary(inserted: 4, saved: true))
        #expect(try context.merge(objects: payload.objects, for: MergeDatedItem.self) == MergeSummary())
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let dates = try reader.performAndWait { () throws in
            try reader.fetch(FetchRequest<MergeDatedItem>(sortBy: [SortDescriptor(\.id)])).map { $0.at?.timeIntervalSinceReferenceDate }
        }
        #expect(dates == [725_857_445, 725_857_445.123, 725_857_445.123456, 725_857_445.5])
        // Not a date: refused, nothing saved.
        for bad in [#"[{"id": 5, "at": "2024-01-02T03:04:05.Z"}]"#, #"[{"id": 5, "at": "yesterday"}]"#] {
            let payload = try JSONPayload(bad)
            let error = #expect(throws: ActionError.self) { try context.merge(objects: payload.objects, for: MergeDatedItem.self) }
            // The message names the value's own type, not the dictionary's `Any`.
            #expect(error?.message == "Object 0 of 'MergeDatedItem': 'at' has a value of type String, which is not a Date.")
        }
        #expect(try reader.performAndWait { () throws in try reader.count(for: FetchRequest<MergeDatedItem>()) } == 4)
    }
}
