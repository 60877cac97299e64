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

    @Test func aCustomStageThenALightweightStage() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("s.sqlite")
        try Self.makeStore(url)
        let manager = StagedMigrationManager([try Self.decodeStage(), LightweightMigrationStage([try Self.v2(), try Self.v3()])])
        let students = try withMigrationStore(try Self.v3(), at: url, options: StoreOptions(stagedMigrationManager: manager)) { context in
            try fetchByName(context, "Student").map { "\($0.nameValue) \((try? $0.value(forKey: "age")) as? Int ?? -1)" }
        }
        #expect(students == ["Ann 20", "Ben 22"])
    }

    @Test func aThrowingHandlerNamesItsStageAndTheStoreKeepsItsVersion() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("s.sqlite")
        try Self.makeStore(url)
        let manager = StagedMigrationManager([
            try Self.decodeStage(throwing: true), LightweightMigrationStage([try Self.v2(), try Self.v3()])
        ])
        let error = #expect(throws: CoherenceError.self) {
            try withMigrationStore(try Self.v3(), at: url, options: StoreOptions(stagedMigrationManager: manager)) { _ in }
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("decode blobs") == true)
        // The step's migration had committed (v2); its handler's changes were not saved.
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        #expect(try Self.v2().isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let names = try withMigrationStore(try Self.v2(), at: url) { context in try fetchByName(context, "Student").map(\.nameValue) }
        #expect(names == ["", ""])
    }
}
