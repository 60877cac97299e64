import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The PostgreSQL store sends a save's statements in pipelines (a few round trips per save, not
/// one per object), finds conflicts among them as it did one statement at a time, and runs an
/// update inside a savepoint only when it changes a column of a uniqueness constraint.
@Suite struct PostgreSQLPipelineTests {
    /// A context on a new PostgreSQL store, and the store.
    func open(_ dir: TemporaryDirectory, options: StoreOptions = StoreOptions()) throws -> (ManagedObjectContext, PostgreSQLStore) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: .postgreSQL, at: try dir.postgreSQLURL(), options: options)
        let store = try #require(coordinator.persistentStores.first?.engine as? PostgreSQLStore)
        return (ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator), store)
    }

    /// The round trips the store's writer connection makes while `body` runs.
    func roundTrips(_ store: PostgreSQLStore, _ body: () throws -> Void) throws -> Int {
        let before = try #require(store.writer.connection).roundTrips
        try body()
        return try #require(store.writer.connection).roundTrips - before
    }

    @Test(.postgreSQLServer) func aSaveOfManyObjectsTakesFewRoundTrips() throws {
        let dir = try TemporaryDirectory()
        let (context, store) = try open(dir)
        let n = 600
        try context.performAndWait {
            // Inserts: BEGIN with the transaction ID, the lock, the version, history and unique
            // index checks and the keys (one pipeline, its seven statements prepared first on
            // this connection's first write), a prepare, three pipelines, COMMIT.
            let inserting = try roundTrips(store) {
                for i in 0..<n {
                    let p = Person(context: context)
                    p.name = "p\(i)"
                    p.age = i
                }
                try context.save()
            }
            #expect(inserting <= 13)
            let people = try context.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]))
            #expect(people.count == n)
            let updating = try roundTrips(store) {
                for p in people { p.score = Double(p.age) * 2 }
                try context.save()
            }
            #expect(updating <= 7)
            let deleting = try roundTrips(store) {
                for p in people where p.age % 2 == 0 { context.delete(p) }
                try context.save()
            }
            #expect(deleting <= 7)
        }
        let (reader, _) = try open(dir)
        try reader.performAndWait {
            let stored = try reader.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.age)]))
            #expect(stored.count == n / 2)
            #expect(stored.allSatisfy { $0.age % 2 == 1 && $0.score == Double($0.age) * 2 && $0.name == "p\($0.age)" })
        }
    }

    /// A save of new objects of one entity reserves their keys in the round trip of its `BEGIN`
    /// (with the history check): once the statements are prepared, saving one new object takes
    /// three round trips (`BEGIN` with the check and the keys, the INSERT, `COMMIT`), and every object gets its own key. A missing key
    /// counter fails the save with `corruptRow` and leaves no transaction open.
    @Test(.postgreSQLServer) func newObjectsGetTheirKeysWithTheBegin() throws {
        let dir = try TemporaryDirectory()
        let (context, store) = try open(dir)
        try context.performAndWait {
            var trips: [Int] = []
            var towns: [Town] = []
            for i in 0..<3 {
                let town = Town(context: context)
                town.name = "t\(i)"
                towns.append(town)
                trips.append(try roundTrips(store) { try context.save() })
            }
            #expect(trips.last == 3)
            let keys = towns.map(\.objectID.primaryKey)
            #expect(Set(keys).count == 3 && towns.allSatisfy { !$0.objectID.isTemporaryID })
            // Two at once: one reservation of two keys.
            let more = [Town(context: context), Town(context: context)]
            more[0].name = "u0"
            more[1].name = "u1"
            #expect(try roundTrips(store) { try context.save() } == 3)
            #expect(Set(keys + more.map(\.objectID.primaryKey)).count == 5)
        }
        let (reader, readerStore) = try open(dir)
        try reader.performAndWait {
            let names = try reader.fetch(FetchRequest<Town>(sortBy: [SortDescriptor(\.name)])).map(\.name)
            #expect(names == ["t0", "t1", "t2", "u0", "u1"])
            // Without the entity's key counter, the save fails and nothing stays open.
            let schema = SQLDialect.postgreSQL.quote(PostgreSQLTestServer.schema(of: try dir.postgreSQLURL()))
            _ = try PostgreSQLTestServer.connection().execute("DELETE FROM \(schema).z_primarykey")
            Town(context: reader).name = "v"
            let error = #expect(throws: CoherenceError.self) { try reader.save() }
            #expect(error?.code == .corruptRow)
            #expect(readerStore.writer.connection?.isInTransaction == false)
        }
    }

    @Test(.postgreSQLServer) func onlyAnUpdateOfAConstrainedColumnTakesASavepoint() throws {
        let dir = try TemporaryDirectory()
        let (context, store) = try open(dir)
        try context.performAndWait {
            let town = Town(context: context)
            town.name = "Avalon"
            try context.save()
            // The second of each kind, once its statement is prepared: BEGIN, UPDATE, COMMIT…
            var population: [Int] = []
            for p in 1...2 {
                population.append(
                    try roundTrips(store) {
                        town.population = p
                        try context.save()
                    })
            }
            #expect(population.last == 3)
            // … and with the savepoint around the update of a unique name: five.
            var name: [Int] = []
            for n in ["Babylon", "Carthage"] {
                name.append(
                    try roundTrips(store) {
                        town.name = n
                        try context.save()
                    })
            }
            #expect(name.last == 5)
        }
    }

    /// With remote-change notifications on, the notification goes to the server in the round
    /// trip of the `COMMIT`: a save of one changed object still takes three round trips.
    @Test(.postgreSQLServer) func theCommitNotificationGoesWithTheCommit() throws {
        let dir = try TemporaryDirectory()
        let (context, store) = try open(dir, options: StoreOptions(remoteChangeNotificationPost: true))
        try context.performAndWait {
            let town = Town(context: context)
            town.name = "Avalon"
            try context.save()
            var trips: [Int] = []
            for p in 1...2 {
                trips.append(
                    try roundTrips(store) {
                        town.population = p
                        try context.save()
                    })
            }
            #expect(trips.last == 3)
        }
        let (reader, _) = try open(dir)
        try reader.performAndWait {
            let towns = try reader.fetch(FetchRequest<Town>())
            #expect(towns.map(\.population) == [2])
        }
    }

    @Test(.postgreSQLServer) func conflictsInsideAPipelineAreFoundAndNothingIsSaved() throws {
        let dir = try TemporaryDirectory()
        let (context, _) = try open(dir)
        let (other, _) = try open(dir)
        let n = 300
        try context.performAndWait {
            for i in 0..<n { Town(context: context).name = "t\(i)" }
            try context.save()
        }
        // A uniqueness conflict among many inserts.
        try context.performAndWait {
            for i in n..<(2 * n) { Town(context: context).name = i == n + 150 ? "t7" : "t\(i)" }
            do {
                try context.save()
                Issue.record("the save should have failed")
            } catch let error as CoherenceError {
                #expect(error.code == .conflict)
                #expect(error.conflicts.count == 1)
                #expect(error.conflicts.first?.kind == .uniqueness)
            }
            context.rollback()
        }
        // A version conflict among many updates: another context changed one of the towns.
        try other.performAndWait {
            let town = try #require(try other.fetch(FetchRequest<Town>(predicate: #Predicate { $0.name == "t150" })).first)
            town.population = -1
            try other.save()
        }
        try context.performAndWait {
            let towns = try context.fetch(FetchRequest<Town>())
            for t in towns where t.population == 0 { t.population = 1 }
            do {
                try context.save()
                Issue.record("the save should have failed")
            } catch let error as CoherenceError {
                #expect(error.code == .conflict)
                #expect(error.conflicts.count == 1)
                #expect(error.conflicts.first?.kind == .version)
                #expect(error.conflicts.first?.persistedSnapshot?["population"] == .integer(-1))
            }
        }
        let (reader, _) = try open(dir)
        try reader.performAndWait {
            let towns = try reader.fetch(FetchRequest<Town>())
            #expect(towns.count == n)
            #expect(towns.filter { $0.population != 0 }.map(\.name) == ["t150"])
        }
    }
}
