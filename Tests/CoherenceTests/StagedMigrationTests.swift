import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Staged migrations: a custom stage decodes a blob into new attributes, a lightweight stage drops
/// it; a throwing handler names its stage and leaves the store at the version before it.
@Suite("Migrations: staged")
struct StagedMigrationTests {
    static func v1() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(name: "Student", properties: [AttributeDescription(name: "data", type: .binaryData, isOptional: true)])
        ])
    }
    static func v2() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Student",
                properties: [
                    AttributeDescription(name: "data", type: .binaryData, isOptional: true),
                    AttributeDescription(name: "name", type: .string, isOptional: true),
                    AttributeDescription(name: "age", type: .integer64, isOptional: true)
                ])
        ])
    }
    static func v3() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Student",
                properties: [
                    AttributeDescription(name: "name", type: .string, isOptional: true),
                    AttributeDescription(name: "age", type: .integer64, isOptional: true)
                ])
        ])
    }

    /// A last version whose `age` is a string: not inferable from `v2` (not a widening).
    static func v3AgeAsText() throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Student",
                properties: [
                    AttributeDescription(name: "name", type: .string, isOptional: true),
                    AttributeDescription(name: "age", type: .string, isOptional: true)
                ])
        ])
    }

    struct Payload: Codable { var name: String; var age: Int }

    static func makeStore(_ url: URL) throws {
        try withMigrationStore(try v1(), at: url) { context in
            for (name, age) in [("Ann", 20), ("Ben", 22)] {
                try insertObject(context, "Student", ["data": try JSONEncoder().encode(Payload(name: name, age: age))])
            }
            try context.save()
        }
    }

    static func decodeStage(throwing: Bool = false) throws -> CustomMigrationStage {
        var stage = CustomMigrationStage(migratingFrom: try v1(), to: try v2(), label: "decode blobs")
        stage.didMigrateHandler = { context in
            if throwing { throw CoherenceError(.validation, "bad blob") }
            for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
                let data = try student.value(forKey: "data") as? Data ?? Data()
                let payload = try JSONDecoder().decode(Payload.self, from: data)
                try student.setValue(payload.name, forKey: "name")
                try student.setValue(payload.age, forKey: "age")
            }
        }
        return stage
    }

    @Test(arguments: storedTypes)
    func aCustomStageThenALightweightStage(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "s")
        try Self.makeStore(url)
        let manager = StagedMigrationManager([try Self.decodeStage(), LightweightMigrationStage([try Self.v2(), try Self.v3()])])
        let students = try withMigrationStore(try Self.v3(), at: url, options: StoreOptions(stagedMigrationManager: manager)) { context in
            try fetchByName(context, "Student").map { "\($0.nameValue) \((try? $0.value(forKey: "age")) as? Int ?? -1)" }
        }
        #expect(students == ["Ann 20", "Ben 22"])
    }

    /// The blobs of the students, read at the first version without migrating.
    static func blobsAtFirstVersion(_ url: URL) throws -> [String] {
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: migrationStoreType(url), at: url)
        #expect(try v1().isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        return try withMigrationStore(try v1(), at: url, options: StoreOptions(migratesAutomatically: false)) { context in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).compactMap { try $0.value(forKey: "data") as? Data }
                .map { String(decoding: $0, as: UTF8.self) }.sorted()
        }
    }

    @Test(arguments: storedTypes)
    func aThrowingHandlerNamesItsStageAndTheStoreKeepsItsVersion(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "s")
        try Self.makeStore(url)
        let before = try Self.blobsAtFirstVersion(url)
        let manager = StagedMigrationManager([
            try Self.decodeStage(throwing: true), LightweightMigrationStage([try Self.v2(), try Self.v3()])
        ])
        let error = #expect(throws: CoherenceError.self) {
            try withMigrationStore(try Self.v3(), at: url, options: StoreOptions(stagedMigrationManager: manager)) { _ in }
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("decode blobs") == true)
        #expect(error?.store == type.location(of: url))
        // The step's migration ran, but on a copy: the store is at its first version, as it was.
        #expect(try Self.blobsAtFirstVersion(url) == before)
        #expect(before.count == 2)
        #expect(try !migrationCopyLeft(url, in: dir))
    }

    /// Three versions, two custom stages: the second stage's handler (before or after its step)
    /// throws after the first stage succeeded. Nothing of either stage is left.
    @Test(arguments: storedTypes, ["will", "did"])
    func aLaterStageThatThrowsLeavesTheFirstVersion(_ type: StoreType, _ handler: String) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "s")
        try Self.makeStore(url)
        let before = try Self.blobsAtFirstVersion(url)
        var drop = CustomMigrationStage(migratingFrom: try Self.v2(), to: try Self.v3(), label: "drop blobs")
        let fail: @Sendable (ManagedObjectContext) throws -> Void = { context in
            for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
                try student.setValue("changed", forKey: "name")
            }
            throw CoherenceError(.validation, "refused")
        }
        if handler == "will" { drop.willMigrateHandler = fail } else { drop.didMigrateHandler = fail }
        let manager = StagedMigrationManager([try Self.decodeStage(), drop])
        let error = #expect(throws: CoherenceError.self) {
            try withMigrationStore(try Self.v3(), at: url, options: StoreOptions(stagedMigrationManager: manager)) { _ in }
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("'drop blobs'") == true)
        #expect(error?.message.contains("decode blobs") == false)
        #expect(error?.underlyingErrors.first.map { "\($0)" }?.contains("refused") == true)
        #expect(try Self.blobsAtFirstVersion(url) == before)
        #expect(try !migrationCopyLeft(url, in: dir))
        // Once the stage is fixed, the same store migrates all the way.
        let fixed = StagedMigrationManager([try Self.decodeStage(), LightweightMigrationStage([try Self.v2(), try Self.v3()])])
        let students = try withMigrationStore(try Self.v3(), at: url, options: StoreOptions(stagedMigrationManager: fixed)) { context in
            try fetchByName(context, "Student").map(\.nameValue)
        }
        #expect(students == ["Ann", "Ben"])
    }

    /// What the stages leave undone is inferred on the same copy: when that fails, the stages'
    /// work is not kept either.
    @Test(arguments: storedTypes)
    func aFailingInferredRemainderLeavesTheFirstVersion(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir, "s")
        try Self.makeStore(url)
        let before = try Self.blobsAtFirstVersion(url)
        // `age` becomes a string: not a widening.
        let v3 = try Self.v3AgeAsText()
        let manager = StagedMigrationManager([try Self.decodeStage()])
        let error = #expect(throws: CoherenceError.self) {
            try withMigrationStore(v3, at: url, options: StoreOptions(stagedMigrationManager: manager)) { _ in }
        }
        #expect(error?.code == .migrationNotInferable)
        #expect(error?.store == type.location(of: url))
        #expect(try Self.blobsAtFirstVersion(url) == before)
        #expect(try !migrationCopyLeft(url, in: dir))
    }
}

/// A staged migration of a file that is not a store yet.
extension StagedMigrationTests {
    /// An empty file (a first open killed before its commit leaves one) becomes a new store, as
    /// it does without a migration manager; a SQLite database that is not a store is refused
    /// with `.storeIncompatible` and left as it was.
    @Test func anEmptyFileBecomesAStoreAndAForeignDatabaseIsRefused() throws {
        let dir = try TemporaryDirectory()
        let manager = StagedMigrationManager([try Self.decodeStage()])
        let options = StoreOptions(stagedMigrationManager: manager)
        let empty = dir.file("empty.sqlite")
        #expect(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        let names = try withMigrationStore(try Self.v2(), at: empty, options: options) { context in
            try insertObject(context, "Student", ["name": "Ann"])
            try context.save()
            return try fetchByName(context, "Student").map(\.nameValue)
        }
        #expect(names == ["Ann"])
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: empty)
        #expect(try Self.v2().isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))

        let foreign = dir.file("foreign.sqlite")
        do {
            let c = try SQLiteConnection(location: .file(foreign.path), switchesToWAL: false)
            try c.execute("CREATE TABLE t (x INTEGER)")
        }
        let before = try Data(contentsOf: foreign)
        let error = #expect(throws: CoherenceError.self) { try withMigrationStore(try Self.v2(), at: foreign, options: options) { _ in } }
        #expect(error?.code == .storeIncompatible)
        #expect(try Data(contentsOf: foreign) == before)
    }
}
