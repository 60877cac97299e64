import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

// A to-many relationship that is its own inverse (`friends` ↔ `friends`) is saved: both ends
// read it back, and removing a pair or deleting an object removes it from both. A to-one
// relationship that is its own inverse (`partner` ↔ `partner`) is saved on both rows of a pair:
// a new pair breaks the old ones, and a store whose table lacks the column gets it on open.

/// A person whose `friends` relationship is its own inverse.
final class Mate: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "friends") var friends: Set<Mate>
}

/// A dancer whose `partner` relationship is its own inverse.
final class Dancer: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "partner") var partner: Dancer?
}

/// A dancer whose `partner` relationship is its own inverse and cascades.
final class CascadingDancer: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "partner", deleteRule: .cascade) var partner: CascadingDancer?
}

@Suite("Self-inverse relationships")
struct SelfInverseRelationshipTests {
    /// Every mate's friends, by name, read by a new context.
    private func friends(_ coordinator: PersistentStoreCoordinator) throws -> [String: [String]] {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try reader.performAndWait {
            var result: [String: [String]] = [:]
            for m in try reader.fetch(FetchRequest<Mate>()) { result[m.name] = m.friends.map(\.name).sorted() }
            return result
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aToManyThatIsItsOwnInverseIsSavedFromBothEnds(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try ManagedObjectModel(types: [Mate.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let mates = ["a", "b", "c"].map { name in
                let m = Mate(context: context)
                m.name = name
                return m
            }
            mates[0].friends = [mates[1], mates[2]]
            try context.save()
        }
        #expect(try friends(coordinator) == ["a": ["b", "c"], "b": ["a"], "c": ["a"]])

        try context.performAndWait {
            let mates = try context.fetch(FetchRequest<Mate>())
            let a = try #require(mates.first { $0.name == "a" })
            let b = try #require(mates.first { $0.name == "b" })
            let c = try #require(mates.first { $0.name == "c" })
            b.friends.remove(a)
            c.friends.insert(b)
            try context.save()
        }
        #expect(try friends(coordinator) == ["a": ["c"], "b": ["c"], "c": ["a", "b"]])

        try context.performAndWait {
            let c = try #require(try context.fetch(FetchRequest<Mate>()).first { $0.name == "c" })
            context.delete(c)
            try context.save()
        }
        #expect(try friends(coordinator) == ["a": [], "b": []])
    }
}

@Suite("Self-inverse to-one relationships")
struct SelfInverseToOneTests {
    static func model() throws -> ManagedObjectModel { try ManagedObjectModel(types: [Dancer.self]) }

    /// Every dancer's partner, by name ("-" for none), read by a new context of `coordinator`.
    static func partners(_ coordinator: PersistentStoreCoordinator) throws -> [String: String] {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try reader.performAndWait {
            var result: [String: String] = [:]
            for d in try reader.fetch(FetchRequest<Dancer>()) { result[d.name] = d.partner?.name ?? "-" }
            return result
        }
    }

    /// The partners as the store holds them: read by a new coordinator of the store at `dir`
    /// (a new context of `coordinator` for an in-memory store, which lives in its coordinator).
    static func stored(_ type: StoreType, _ dir: TemporaryDirectory, _ coordinator: PersistentStoreCoordinator) throws
        -> [String: String]
    {
        guard type != .inMemory else { return try partners(coordinator) }
        return try partners(makeCoordinator(type, in: dir, model: try model()))
    }

    /// Dancers by name, fetched in `context`.
    static func dancers(_ context: ManagedObjectContext) throws -> [String: Dancer] {
        Dictionary(try context.fetch(FetchRequest<Dancer>()).map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Inserts dancers with `names` and saves.
    static func insert(_ names: [String], in context: ManagedObjectContext) throws {
        try context.performAndWait {
            for name in names { Dancer(context: context).name = name }
            try context.save()
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aPairIsSavedOnBothRowsAndReadBackByANewCoordinator(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try Self.model())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let a = Dancer(context: context), b = Dancer(context: context), c = Dancer(context: context)
            (a.name, b.name, c.name) = ("a", "b", "c")
            a.partner = b
            #expect(b.partner === a)
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "b", "b": "a", "c": "-"])
        // Both rows hold the key: a fetch by the relationship finds each side.
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let found = try reader.performAndWait {
            try reader.fetch(FetchRequest<Dancer>(predicate: #Predicate { $0.partner != nil })).map(\.name).sorted()
        }
        #expect(found == ["a", "b"])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aNewPairBreaksTheOldPairsInTheStore(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try Self.model())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try Self.insert(["a", "b", "c", "d"], in: context)
        try context.performAndWait {
            let d = try Self.dancers(context)
            d["a"]?.partner = d["b"]
            d["c"]?.partner = d["d"]
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "b", "b": "a", "c": "d", "d": "c"])
        // a and c pair up: b and d are left without partners.
        try context.performAndWait {
            let d = try Self.dancers(context)
            d["c"]?.partner = d["a"]
            #expect(d["a"]?.partner === d["c"] && d["b"]?.partner == nil && d["d"]?.partner == nil)
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "c", "b": "-", "c": "a", "d": "-"])
        // Setting nil clears both rows.
        try context.performAndWait {
            try Self.dancers(context)["a"]?.partner = nil
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "-", "b": "-", "c": "-", "d": "-"])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aDancerIsItsOwnPartnerAndThenAnothers(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try Self.model())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try Self.insert(["a", "b", "c"], in: context)
        try context.performAndWait {
            let d = try Self.dancers(context)
            d["a"]?.partner = d["b"]
            try context.save()
            // a leaves b for itself.
            d["a"]?.partner = d["a"]
            #expect(d["a"]?.partner === d["a"] && d["b"]?.partner == nil)
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "a", "b": "-", "c": "-"])
        try context.performAndWait {
            let d = try Self.dancers(context)
            // a leaves itself for c; then c leaves a for itself.
            d["a"]?.partner = d["c"]
            #expect(d["a"]?.partner === d["c"] && d["c"]?.partner === d["a"])
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "c", "b": "-", "c": "a"])
        try context.performAndWait {
            let d = try Self.dancers(context)
            d["c"]?.partner = d["c"]
            #expect(d["a"]?.partner == nil)
            try context.save()
            d["c"]?.partner = nil
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "-", "b": "-", "c": "-"])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func deletingAPartnerNullifiesTheOtherRow(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try Self.model())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try Self.insert(["a", "b", "c", "d"], in: context)
        let c = try context.performAndWait {
            let d = try Self.dancers(context)
            d["a"]?.partner = d["b"]
            d["c"]?.partner = d["d"]
            try context.save()
            try context.delete(#require(d["b"]))
            try context.save()
            return try #require(d["c"]).objectID
        }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "-", "c": "d", "d": "c"])
        // A batch delete nullifies too.
        _ = try coordinator.execute(BatchDeleteRequest(objectIDs: [c]))
        #expect(try Self.stored(type, dir, coordinator) == ["a": "-", "d": "-"])
    }

    /// Deleting an unsaved object whose cascade comes back to it (its partner is itself, or a
    /// partner that cascades back) recursed until the stack overflowed.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aCascadeBetweenUnsavedPartnersDeletesBothOnce(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try ManagedObjectModel(types: [CascadingDancer.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let alone = CascadingDancer(context: context)
            alone.partner = alone
            context.delete(alone)
            #expect(alone.isDeleted)
            let a = CascadingDancer(context: context), b = CascadingDancer(context: context), c = CascadingDancer(context: context)
            (a.name, b.name, c.name) = ("a", "b", "c")
            a.partner = b
            context.delete(a)
            #expect(a.isDeleted && b.isDeleted && !c.isDeleted)
            #expect(context.insertedObjects == [c])
            try context.save()
            // Saved partners cascade too.
            let d = CascadingDancer(context: context), e = CascadingDancer(context: context)
            (d.name, e.name) = ("d", "e")
            d.partner = e
            try context.save()
            context.delete(e)
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        #expect(try reader.performAndWait { try reader.fetch(FetchRequest<CascadingDancer>()).map(\.name) } == ["c"])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aChildContextsNewPairReachesTheStore(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try Self.model())
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "parent")
        try Self.insert(["a", "b", "c", "d"], in: parent)
        try parent.performAndWait {
            let d = try Self.dancers(parent)
            d["a"]?.partner = d["b"]
            d["c"]?.partner = d["d"]
            try parent.save()
        }
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent, name: "child")
        try child.performAndWait {
            let d = try Self.dancers(child)
            d["a"]?.partner = d["d"]
            try child.save()
        }
        let inParent = try parent.performAndWait {
            try Self.dancers(parent).mapValues { $0.partner?.name ?? "-" }
        }
        #expect(inParent == ["a": "d", "b": "-", "c": "-", "d": "a"])
        try parent.performAndWait { try parent.save() }
        #expect(try Self.stored(type, dir, coordinator) == ["a": "d", "b": "-", "c": "-", "d": "a"])
    }

    // MARK: Stores whose table has no partner column

    /// Makes the store at `url` (of `type`) as a store is that has no column for `partner`:
    /// the column and its index dropped, the recorded schema keeping the relationship on its
    /// inverse. Checks that the column is gone.
    static func dropPartnerColumn(_ type: StoreType, at url: URL) throws {
        func oldSchema(_ json: String?) throws -> String {
            var schema = try #require(StoredSchema(json: json))
            let e = try #require(schema.entities.firstIndex { $0.name == "Dancer" })
            let r = try #require(schema.entities[e].relationships.firstIndex { $0.name == "partner" })
            #expect(schema.entities[e].relationships[r].storage == "fk")
            schema.entities[e].relationships[r].storage = "inverse"
            return schema.json
        }
        if type == .postgreSQL {
            let c = try PostgreSQLTestServer.connection()
            let schema = SQLDialect.postgreSQL.quote(PostgreSQLTestServer.schema(of: url))
            try c.execute("ALTER TABLE \(schema).\"Dancer\" DROP COLUMN \"partner\"")
            let json = try c.execute("SELECT Z_VALUE FROM \(schema).Z_METADATA WHERE Z_KEY = 'schema'").rows.first?.first
            guard case .text(let text)? = json else { throw CoherenceError(.storeReadFailed, "No recorded schema.") }
            try c.execute("UPDATE \(schema).Z_METADATA SET Z_VALUE = $1 WHERE Z_KEY = 'schema'", [.text(try oldSchema(text))])
            let columns = try c.execute(
                "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'Dancer'",
                [.text(PostgreSQLTestServer.schema(of: url))]
            ).rows.compactMap { row -> String? in
                guard case .text(let name)? = row.first else { return nil }
                return name
            }
            #expect(Set(columns) == ["z_pk", "z_ent", "z_opt", "name"])
            return
        }
        let c = try SQLiteConnection(location: .file(url.path))
        try c.execute("DROP INDEX \"Z_Dancer_partner\"")
        try c.execute("ALTER TABLE \"Dancer\" DROP COLUMN \"partner\"")
        let json = try c.prepare("SELECT Z_VALUE FROM Z_METADATA WHERE Z_KEY = 'schema'").rows { $0.string(0) }.first
        let update = try c.prepare("UPDATE Z_METADATA SET Z_VALUE = ? WHERE Z_KEY = 'schema'")
        update.bind(try oldSchema(json), at: 1)
        try update.execute()
        let columns = try c.prepare("SELECT name FROM pragma_table_info('Dancer')").rows { $0.string(0) }
        #expect(columns == ["Z_PK", "Z_ENT", "Z_OPT", "name"])
    }

    /// The storage the store at `url` records for `partner`.
    static func recordedStorage(_ type: StoreType, at url: URL) throws -> String? {
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: type, at: url)
        let schema = StoredSchema(json: metadata["schema"])
        return schema?.entitiesByName["Dancer"]?.relationships.first { $0.name == "partner" }?.storage
    }

    @Test(arguments: storedTypes)
    func aStoreWithoutThePartnerColumnGetsItWhenItOpens(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try withMigrationStore(try Self.model(), at: url) { context in
            for name in ["a", "b", "c"] { Dancer(context: context).name = name }
            try context.save()
        }
        try Self.dropPartnerColumn(type, at: url)
        #expect(try Self.recordedStorage(type, at: url) == "inverse")

        // The same model opens it (no migration: the version hash is the same), with its rows.
        try withMigrationStore(try Self.model(), at: url) { context in
            let d = try Self.dancers(context)
            #expect(d.keys.sorted() == ["a", "b", "c"])
            d["a"]?.partner = d["b"]
            try context.save()
        }
        #expect(try Self.recordedStorage(type, at: url) == "fk")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        try coordinator.addPersistentStore(type: type, at: url)
        #expect(try Self.partners(coordinator) == ["a": "b", "b": "a", "c": "-"])
    }

    @Test(arguments: storedTypes)
    func aStoreWithoutThePartnerColumnMigratesToANewVersion(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try withMigrationStore(try Self.model(), at: url) { context in
            for name in ["a", "b"] { Dancer(context: context).name = name }
            try context.save()
        }
        try Self.dropPartnerColumn(type, at: url)
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Dancer",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    AttributeDescription(name: "style", type: .string, defaultValue: "waltz"),
                    RelationshipDescription(name: "partner", destination: "Dancer", inverse: "partner")
                ])
        ])
        try withMigrationStore(v2, at: url) { context in
            let d = try fetchByName(context, "Dancer")
            #expect(try d.map { try $0.value(forKey: "style") as? String } == ["waltz", "waltz"])
            try d[0].setValue(d[1], forKey: "partner")
            try context.save()
        }
        #expect(try Self.recordedStorage(type, at: url) == "fk")
        let partners = try withMigrationStore(v2, at: url) { context in
            try fetchByName(context, "Dancer").map { ((try $0.value(forKey: "partner")) as? ManagedObject)?.nameValue ?? "-" }
        }
        #expect(partners == ["b", "a"])
    }
}
