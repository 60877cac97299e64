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
}
