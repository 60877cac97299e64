import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("RowCache")
struct RowCacheTests {
    let entity: EntityDescription
    let store = UUID()

    init() throws {
        entity = try #require(try makeTestModel().entity(for: Person.self))
    }

    func id(_ key: Int64) -> ObjectID { ObjectID(entity: entity, storeIdentifier: store, primaryKey: key) }

    func entry(_ version: Int64) -> RowCache.Entry { .init(values: [.integer(version)], version: version) }

    /// Caching and removing rows over and over (rows read, then deleted) keeps the order list
    /// about the size of the cache, instead of one ID per row ever cached.
    @Test func theOrderListStaysBoundedOverInsertRemoveCycles() {
        let cache = RowCache(capacity: 1_000)
        for k in Int64(0)..<10 { cache.store(entry(k), for: id(k)) }
        for k in Int64(10)..<20_010 {
            cache.store(entry(k), for: id(k))
            cache.remove([id(k)])
        }
        #expect(cache.count == 10)
        #expect(cache.orderCount <= 2 * cache.count + 17, "order list holds \(cache.orderCount) IDs for \(cache.count) entries")
        // The rows cached before the cycles are still there.
        #expect((0..<10).allSatisfy { cache.entry(for: id($0))?.entry.version == $0 })
    }

    /// The same row cached, removed and cached again leaves one live ID in the order list.
    @Test func aRowCachedAgainAfterRemovalIsListedOnce() {
        let cache = RowCache(capacity: 1_000)
        for round in Int64(0)..<5_000 {
            cache.store(entry(round), for: id(1))
            cache.remove([id(1)])
        }
        cache.store(entry(7), for: id(1))
        #expect(cache.orderCount <= 2 * cache.count + 17)
        #expect(cache.entry(for: id(1))?.entry.version == 7)
    }

    /// Compaction keeps the insertion order: past capacity, the oldest rows go first.
    @Test func trimmingAfterCompactionDropsTheOldestRows() {
        let cache = RowCache(capacity: 100)
        for k in Int64(0)..<90 { cache.store(entry(k), for: id(k)) }
        // Keep every third row: 60 stale IDs against 30 entries compacts the list.
        cache.remove((Int64(0)..<90).filter { $0 % 3 != 0 }.map(id))
        #expect(cache.count == 30)
        #expect(cache.orderCount == 30)
        for k in Int64(90)..<161 { cache.store(entry(k), for: id(k)) }
        // 101 entries > capacity: trimmed to the newest 50 (111 ..< 161).
        #expect(cache.count == 50)
        #expect(cache.entry(for: id(0)) == nil)
        #expect(cache.entry(for: id(87)) == nil)
        #expect(cache.entry(for: id(110)) == nil)
        #expect(cache.entry(for: id(111)) != nil)
        #expect(cache.entry(for: id(160)) != nil)
    }
}
