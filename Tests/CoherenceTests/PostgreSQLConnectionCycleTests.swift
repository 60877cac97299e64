import Dispatch
import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

@Suite("PostgreSQL: connections over open/use/release cycles", .timeLimit(.minutes(5)))
struct PostgreSQLConnectionCycleTests {
    @Test(.postgreSQLServer, arguments: ["release", "remove", "container"])
    func connectionsDoNotGrow(_ how: String) throws {
        let dir = try TemporaryDirectory()
        let (url, schema) = try PostgreSQLContainerTests.storeURL(dir, "cycles_" + how)
        let model = try ManagedObjectModel(types: [RemoteNote.self])
        let options = StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true)
        for cycle in 0..<20 {
            do {
                let coordinator: PersistentStoreCoordinator
                var container: GenericPersistentContainer<ContextStrategy.DirectIndependent>?
                if how == "container" {
                    let c = GenericPersistentContainer<ContextStrategy.DirectIndependent>(name: "Cycles", managedObjectModel: model)
                    try c.attachPersistentStore(at: dir.url, for: StoreConfiguration(type: .postgreSQL, location: url, options: options))
                    coordinator = c.persistentStoreCoordinator
                    container = c
                } else {
                    coordinator = PersistentStoreCoordinator(managedObjectModel: model)
                    try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: options)
                }
                let pinned = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
                let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
                try pinned.performAndWait {
                    try pinned.setQueryGeneration(from: .current)
                    _ = try pinned.count(for: FetchRequest<RemoteNote>())
                }
                try writer.performAndWait {
                    let n = RemoteNote(context: writer)
                    n.author = "a"
                    n.sequence = cycle
                    try writer.save()
                }
                let seen = try pinned.performAndWait { try pinned.count(for: FetchRequest<RemoteNote>()) }
                #expect(seen == cycle)
                _ = try coordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?))
                if how == "remove" { for s in coordinator.persistentStores { try coordinator.remove(s) } }
                _ = container
                container = nil
            }
        }
        #expect(try PostgreSQLContainerTests.connectionsAfterClose(schema) == 0)
    }
}
