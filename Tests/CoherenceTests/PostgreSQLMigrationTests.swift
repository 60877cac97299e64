import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A PostgreSQL store's migrations are all or nothing across processes: a client killed
/// (SIGKILL) at any step of an inferred migration, or anywhere in a staged one, leaves the store
/// at its old version with every row; run again, the migration finishes and leaves no copy.
@Suite(.serialized, .timeLimit(.minutes(5))) struct PostgreSQLMigrationTests {
    static let rows = 300

    /// A store of `rows` items (and a counter) at the typed version.
    static func makeStore(_ url: URL) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [PGCounter.self, PGItem.self]))
        let store = try coordinator.addPersistentStore(type: .postgreSQL, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            PGCounter(context: context).name = "c"
            for i in 0..<rows {
                let item = PGItem(context: context)
                item.name = "item \(i)"
                item.batch = i
            }
            try context.save()
        }
        try coordinator.remove(store)
    }

    /// The items' names by batch, read at the typed version without migrating.
    static func namesAtFirstVersion(_ url: URL) throws -> [String] {
        let model = try ManagedObjectModel(types: [PGCounter.self, PGItem.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .postgreSQL, at: url, options: StoreOptions(migratesAutomatically: false))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try context.performAndWait { () throws -> [String] in
            try context.fetch(FetchRequest<PGItem>(sortBy: [SortDescriptor(\.batch)])).map(\.name)
        }
    }

    static let intact = (0..<rows).map { "item \($0)" }

    /// Makes a store, has a client migrate it (`option`) until `point`, kills it there, and
    /// checks that the store opens at the first version with every item.
    static func killMigration(at point: String, _ option: String, in dir: TemporaryDirectory) async throws -> URL {
        let url = try dir.postgreSQLURL("items")
        try makeStore(url)
        let client = try WriterProcess(
            store: URL(fileURLWithPath: "/unused"), author: "migrator", ["--url", url.absoluteString, option, point],
            program: "CoherencePGClient")
        #expect(await client.waitForLine("MIGRATING \(point)"))
        await client.kill()
        #expect(try namesAtFirstVersion(url) == intact)
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .postgreSQL, at: url)
        #expect(
            try ManagedObjectModel(types: [PGCounter.self, PGItem.self]).isConfiguration(
                withName: nil, compatibleWithStoreMetadata: metadata))
        return url
    }

    /// The client runs the migration (`option`) to its end.
    static func migrateToTheEnd(_ url: URL, _ option: String) async throws {
        let client = try WriterProcess(
            store: URL(fileURLWithPath: "/unused"), author: "migrator", ["--url", url.absoluteString, option, "none"],
            program: "CoherencePGClient")
        #expect(await client.waitForLine("MIGRATED"))
        #expect(await client.finish().status == 0)
    }

    /// Schemas named with upper case letters or spaces (quoted identifiers) migrate as others
    /// do: the catalog is searched by the schema's name, not by parsing it as an identifier.
    @Test(.postgreSQLServer, arguments: ["Tenant_Upper", "with space"])
    func aStoreInAQuotedSchemaNameMigrates(_ name: String) throws {
        let schema = "\(name)_\(UUID().uuidString.prefix(6).lowercased())"
        defer {
            PostgreSQLTestServer.drop(schema: schema)
            PostgreSQLTestServer.drop(schema: schema + "_migrating")
        }
        let url = try PostgreSQLTestServer.url(schema: schema)
        try withMigrationStore(try StagedMigrationTests.v1(), at: url) { context in
            try insertObject(context, "Student", ["data": Data([1, 2])])
            try context.save()
        }
        let count = try withMigrationStore(try StagedMigrationTests.v2(), at: url) { context in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).count
        }
        #expect(count == 1)
    }

    @Test(.postgreSQLServer, arguments: ["rename", "copy PGItem", "indexes", "drop"])
    func anInferredMigrationKilledAtAnyStepLeavesTheOldVersion(_ step: String) async throws {
        let dir = try TemporaryDirectory()
        let url = try await Self.killMigration(at: step, "--migrate-stop-at", in: dir)
        try await Self.migrateToTheEnd(url, "--migrate-stop-at")
        let error = #expect(throws: CoherenceError.self) { try Self.namesAtFirstVersion(url) }
        #expect(error?.code == .storeIncompatible)
        let dump = try PostgreSQLTestServer.dump(schema: PostgreSQLTestServer.schema(of: url))
        #expect(dump.contains("\"item 0\"") && dump.contains("\"item \(Self.rows - 1)\""))
        #expect(!dump.contains("Z_MIGRATING"))
    }

    /// Killed between its stages, inside a handler, inside a stage's inferred migration, or with
    /// every stage done just before the copy takes the store's place.
    @Test(.postgreSQLServer, arguments: ["stage drop names", "handler", "copy PGItem", "replace"])
    func aStagedMigrationKilledAnywhereLeavesTheOldVersion(_ point: String) async throws {
        let dir = try TemporaryDirectory()
        let url = try await Self.killMigration(at: point, "--staged-stop-at", in: dir)
        // Run again to the end: the copy the killed client left is replaced, and none is left.
        try await Self.migrateToTheEnd(url, "--staged-stop-at")
        let v3 = try stagedItemModel()
        let titles = try withMigrationStore(v3, at: url) { context in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "PGItem")).map {
                "\(try $0.value(forKey: "title") as? String ?? "") \(try $0.value(forKey: "batch") as? Int ?? 0)"
            }.sorted()
        }
        #expect(titles == Self.intact.map { "\($0.uppercased()) -1" }.sorted())
        #expect(try !migrationCopyLeft(url, in: dir))
    }

    /// The last version of the client's staged migration (see CoherencePGClient/Migrations.swift).
    func stagedItemModel() throws -> ManagedObjectModel {
        let counter = EntityDescription(
            name: "PGCounter",
            properties: [
                AttributeDescription(name: "name", type: .string, defaultValue: ""),
                AttributeDescription(name: "value", type: .integer64, defaultValue: 0)
            ])
        let item = EntityDescription(
            name: "PGItem",
            properties: [
                AttributeDescription(name: "batch", type: .integer64, defaultValue: 0),
                AttributeDescription(name: "title", type: .string, defaultValue: "")
            ])
        return try ManagedObjectModel(entities: [counter, item])
    }
}
