import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Model versions: per-entity hashes in a store's metadata, versions of a `.xcdatamodeld`,
/// renaming and version identifiers, and reading a store's version without adding it.
@Suite("Model versions")
struct ModelVersionTests {
    static func hrURL() throws -> URL {
        try #require(Bundle.module.url(forResource: "HR", withExtension: "xcdatamodeld"))
    }

    @Test func aVersionedModelLoadsAnyVersionByName() throws {
        let url = try Self.hrURL()
        #expect(ManagedObjectModel.versionNames(contentsOf: url) == ["HR", "HR 2"])
        let first = try ManagedObjectModel(contentsOf: url, version: "HR")
        let second = try ManagedObjectModel(named: "HR", in: .module, version: "HR 2.xcdatamodel")
        let current = try ManagedObjectModel(named: "HR", in: .module)
        #expect(first.entities.map(\.name) == ["Employee"])
        #expect(second.entities.map(\.name) == ["Department", "Employee", "Session"])
        #expect(first.versionIdentifier == "HR")
        #expect(second.versionIdentifier == "HR 2")
        #expect(current.versionHash == second.versionHash)
        #expect(first.versionHash != second.versionHash)
        #expect(first.entityVersionHashes["Employee"] != second.entityVersionHashes["Employee"])
        #expect(throws: ModelError.self) { try ManagedObjectModel(contentsOf: url, version: "HR 9") }
    }

    @Test func renamingIdentifiersComeFromCodeAndXcodeModels() throws {
        let person = EntityDescription(
            name: "Person",
            properties: [
                AttributeDescription(name: "fullName", type: .string, isOptional: true, renamingIdentifier: "name"),
                RelationshipDescription(name: "home", destination: "Person", renamingIdentifier: "town")
            ], renamingIdentifier: "Human")
        let model = try ManagedObjectModel(entities: [person], versionIdentifier: "v2")
        #expect(model.versionIdentifier == "v2")
        #expect(person.renamingIdentifier == "Human")
        #expect(person.propertiesByName["fullName"]?.renamingIdentifier == "name")
        #expect(person.propertiesByName["home"]?.renamingIdentifier == "town")
        // Renaming identifiers do not change the version hash.
        let plain = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Person",
                properties: [
                    AttributeDescription(name: "fullName", type: .string, isOptional: true),
                    RelationshipDescription(name: "home", destination: "Person")
                ])
        ])
        #expect(plain.versionHash == model.versionHash)

        let dir = try TemporaryDirectory()
        let modelDir = dir.file("M.xcdatamodel")
        try FileManager.default.createDirectory(at: modelDir, withIntermediateDirectories: true)
        try """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model userDefinedModelVersionIdentifier="2.0">
            <entity name="Item" elementID="Thing">
                <attribute name="title" optional="YES" attributeType="String" elementID="name"/>
            </entity>
        </model>
        """.write(to: modelDir.appendingPathComponent("contents"), atomically: true, encoding: .utf8)
        let xml = try ManagedObjectModel(contentsOf: modelDir)
        #expect(xml.versionIdentifier == "2.0")
        #expect(xml.entitiesByName["Item"]?.renamingIdentifier == "Thing")
        #expect(xml.entitiesByName["Item"]?.propertiesByName["title"]?.renamingIdentifier == "name")
    }

    @Test func aStoreRecordsItsVersionAndItIsReadWithoutAddingTheStore() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("hr.sqlite")
        let model = try ManagedObjectModel(contentsOf: try Self.hrURL(), version: "HR 2")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        #expect(metadata["versionIdentifier"] == "HR 2")
        #expect(ManagedObjectModel.entityVersionHashes(inStoreMetadata: metadata) == model.entityVersionHashes)
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let older = try ManagedObjectModel(contentsOf: try Self.hrURL(), version: "HR")
        #expect(!older.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))

        let missing = #expect(throws: CoherenceError.self) {
            try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: dir.file("none.sqlite"))
        }
        #expect(missing?.code == .storeNotFound)
        #expect(!FileManager.default.fileExists(atPath: dir.file("none.sqlite").path))
    }
}
