import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// RCDataKit's `ModelFileManager` and `ModelVersion` over the `Roster.xcdatamodeld` resource.
@Suite("Model versions: ModelVersion enums")
struct ModelVersionEnumTests {
    /// A model file is loaded once per type (current version with its classes, older versions
    /// without); the enum's current version is its last case and uses the file's model.
    @Test func theEnumNamesTheFilesVersions() throws {
        #expect(RosterVersion.currentVersion == .v3)
        #expect(RosterVersion.v2.versionName == "Roster 2")
        let current = try RosterVersion.v3.modelVersion
        #expect(current === RosterModel.model)
        #expect(current === (try RosterModel.loadModel()))
        #expect(current.entity(for: RosterStudent.self)?.name == "Student")
        let first = try RosterVersion.v1.modelVersion
        #expect(first === (try RosterVersion.v1.modelVersion))
        #expect(first.entities.map(\.name) == ["Student"])
        #expect(first.entitiesByName["Student"]?.managedObjectClass == ManagedObject.self)
        #expect(first.versionIdentifier == "Roster")
        let hashes = try RosterVersion.allCases.map { try $0.modelVersion.versionHash }
        #expect(Set(hashes).count == 3)
        // The current version loaded by name has the same schema as the file's model.
        #expect(try RosterModel.loadModel(version: "Roster 3").versionHash == current.versionHash)
    }

    enum MissingModel: ModelFileManager {
        static var bundle: Bundle { .module }
        static var modelName: String { "NoSuchModel" }
    }

    enum BrokenVersion: String, ModelVersion {
        typealias ModelFile = RosterModel
        case missing = "Roster 9"
        case current = "Roster 3"
        static func migrationStages() throws -> [any MigrationStage] {
            [try missing.migrationStage(toVersion: .current, label: "never")]
        }
    }

    /// A version or a model file that is not there is a ModelError, never a crash.
    @Test func aMissingVersionOrFileIsAnError() throws {
        let version = #expect(throws: ModelError.self) { try BrokenVersion.missing.modelVersion }
        #expect(version?.code == .modelNotFound)
        #expect(throws: ModelError.self) { try BrokenVersion.migrationManager() }
        #expect(MissingModel.model.entities.isEmpty)
        let file = #expect(throws: ModelError.self) { try MissingModel.checkedModel() }
        #expect(file?.code == .modelNotFound)
        #expect(file?.message.contains("NoSuchModel") == true)
        #expect(throws: ModelError.self) { try MissingModel.loadModel(version: "NoSuchModel 2") }
    }

    /// `versionsForStore` reads a store's version from its metadata without adding it, or
    /// compares a coordinator's model.
    @Test func versionsForStore() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("roster.sqlite")
        try makeRosterV1Store(at: url)
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: url) == [.v1])
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: url) == [.v1])  // not migrated by looking
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try RosterVersion.v2.modelVersion)
        #expect(try RosterVersion.versionsForStore(coordinator: coordinator) == [.v2])
        let missing = #expect(throws: CoherenceError.self) {
            try RosterVersion.versionsForStore(type: .sqlite, at: dir.file("none.sqlite"))
        }
        #expect(missing?.code == .storeNotFound)
    }

    /// `migrationManager()` runs the enum's stages: the pre-migration handler on the old
    /// schema, the post-migration handler on the new one.
    @Test func migrationManagerMigratesThroughTheStages() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("roster.sqlite")
        try makeRosterV1Store(at: url)
        let manager = try RosterVersion.migrationManager()
        #expect(manager.stages.map(\.label) == ["add names", "decode blobs"])
        let options = StoreOptions(stagedMigrationManager: manager)
        let (students, schools) = try withMigrationStore(RosterModel.model, at: url, options: options) { context in
            (
                try context.fetch(FetchRequest<RosterStudent>()).map { "\($0.id) \($0.firstName ?? "-") \($0.lastName ?? "-")" }.sorted(),
                try context.fetch(FetchRequest<RosterSchool>()).map(\.name)
            )
        }
        #expect(students == ["1 Harry Potter", "2 Hermione Granger", "3 Ron Weasley"])
        #expect(schools == ["3 migrated"])
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: url) == [.v3])
    }

    /// A stage's handler that throws fails the migration naming the stage's label.
    @Test func aThrowingHandlerNamesTheStage() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("roster.sqlite")
        try makeRosterV1Store(at: url)
        let failing = try RosterVersion.v1.migrationStage(
            toVersion: .v2, label: "refuse", preMigration: { _ in throw CoherenceError(.validation, "no") })
        let options = StoreOptions(stagedMigrationManager: StagedMigrationManager([failing]))
        let error = #expect(throws: CoherenceError.self) {
            try withMigrationStore(try RosterVersion.v2.modelVersion, at: url, options: options) { _ in }
        }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("refuse") == true)
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: url) == [.v1])
    }
}
