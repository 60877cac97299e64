import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("Store options")
struct StoreOptionsTests {
    /// `synchronous` sets `PRAGMA synchronous` on the store's writer and on its readers:
    /// NORMAL (1) by default, FULL (2) when asked.
    @Test(arguments: [(StoreOptions.Synchronous?.none, Int64(1)), (.normal, 1), (.full, 2)])
    func synchronousReachesEveryConnection(_ synchronous: StoreOptions.Synchronous?, _ expected: Int64) throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let options = synchronous.map { StoreOptions(synchronous: $0) } ?? StoreOptions()
        let store = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("s.sqlite"), options: options)
        #expect(store.options.synchronous == synchronous ?? .normal)
        let engine = try #require(store.engine as? SQLiteStore)
        let values = try engine.pragmaValues("synchronous")
        #expect(values.writer == expected)
        #expect(values.reader == expected)
        // A store attached by a container gets its configuration's options.
        let container = GenericConnect<ContextStrategy.Mixed>(name: "Durable", managedObjectModel: try makeTestModel())
        let attached = try container.attachPersistentStore(at: dir.url, for: StoreConfiguration(options: options))
        let values2 = try #require(attached.engine as? SQLiteStore).pragmaValues("synchronous")
        #expect(values2.writer == expected && values2.reader == expected)
    }

    @Test func synchronousIsDescribed() {
        #expect(StoreOptions(synchronous: .full).description.contains("synchronous: full"))
        #expect(StoreOptions().synchronous == .normal)
    }

    /// A reader keeps the pages it read (up to 32 MiB, well past SQLite's default 2 MiB): a
    /// second fetch of a table of about 5 MB, with the store unchanged, reads no page from the
    /// file; a save in between makes it read the table again.
    @Test func aRepeatedFetchReadsItsPagesFromTheReadersCache() throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("s.sqlite"))
        let engine = try #require(store.engine as? SQLiteStore)
        let padding = String(repeating: "x", count: 250)
        let entity = try #require(coordinator.managedObjectModel.entitiesByName["Person"])
        try insertObjects(coordinator, (0..<20_000).map { rowInsert(entity, ["name": .text("\($0) \(padding)")]) })
        func fetchAll() throws -> Int {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            return try context.performAndWait { try context.fetch(FetchRequest<Person>()).count }
        }
        _ = try engine.readerPageCacheMisses()
        #expect(try fetchAll() == 20_000)
        #expect(try engine.readerPageCacheMisses() > 1_000)  // about 5 MB in pages of 4 KiB
        #expect(try fetchAll() == 20_000)
        #expect(try engine.readerPageCacheMisses() == 0)
        try insertObjects(coordinator, [rowInsert(entity, ["name": .text("one more")])])
        #expect(try fetchAll() == 20_001)
        #expect(try engine.readerPageCacheMisses() > 0)
    }
}
