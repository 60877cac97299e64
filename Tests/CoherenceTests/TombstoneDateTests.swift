import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// An event whose date history keeps when it is deleted.
final class TombstonedEvent: ManagedObject {
    @Attribute(.preservesValueInHistoryOnDeletion) var name: String = ""
    @Attribute(.preservesValueInHistoryOnDeletion) var when: Date?
}

/// The dates of a history kit's tombstones.
@Suite struct TombstoneDateTests {
    /// A deleted object's date that is NaN or an infinity reads in its tombstone as that number
    /// (as numbers do), not as a made-up date: Foundation's ISO 8601 form of NaN and −∞ is
    /// `-4712-01-01T12:00:00Z` and of +∞ `506713-02-07T00:00:00Z`. Finite dates keep their
    /// ISO 8601 form.
    @Test func aDateThatIsNotFiniteReadsAsItsNumber() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeHistoryCoordinator(.sqlite, in: dir, model: try ManagedObjectModel(types: [TombstonedEvent.self]))
        let dates: [String: Date] = [
            "nan": Date(timeIntervalSinceReferenceDate: .nan), "inf": Date(timeIntervalSinceReferenceDate: .infinity),
            "-inf": Date(timeIntervalSinceReferenceDate: -.infinity), "start": Date(timeIntervalSinceReferenceDate: 0)
        ]
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for (name, date) in dates {
                let event = TombstonedEvent(context: context)
                event.name = name
                event.when = date
            }
            try context.save()
            for event in try context.fetch(FetchRequest<TombstonedEvent>()) { context.delete(event) }
            try context.save()
        }
        let deletion = try #require(try allHistory(coordinator).last)
        let tombstones = (deletion.changes ?? []).compactMap { Tombstone($0, timestamp: deletion.timestamp) }
        let whenByName = Dictionary(
            uniqueKeysWithValues: tombstones.compactMap { t in t.attributes["name"].map { ($0, t.attributes["when"]) } })
        #expect(whenByName == ["nan": "nan", "inf": "inf", "-inf": "-inf", "start": "2001-01-01T00:00:00Z"])
    }
}
