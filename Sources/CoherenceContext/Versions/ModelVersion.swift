import Foundation

/// The versions of a model file as an enum, driving its staged migration (RCDataKit's
/// `ModelVersion`, over ``StagedMigrationManager``).
///
/// ```swift
/// enum SchoolVersion: String, ModelVersion {
///     typealias ModelFile = SchoolModel          // a ModelFileManager
///     case v1 = "School"
///     case v2 = "School 2"
///     case v3 = "School 3"
///
///     static func migrationStages() throws -> [any MigrationStage] {
///         [
///             try v1.migrationStage(toVersion: .v2, label: "add names"),
///             try v2.migrationStage(toVersion: .v3, label: "decode blobs", preMigration: { context in
///                 for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
///                     try student.setValue(nil, forKey: "data")
///                 }
///             }),
///         ]
///     }
/// }
/// let stack = try BasicDataStack(versionKey: SchoolVersion.self, mainAuthor: "app")   // migrates to v3
/// ```
///
/// Where RCDataKit crashes on a version missing from the model file, ``modelVersion``,
/// ``migrationStage(toVersion:label:preMigration:postMigration:)``, ``migrationManager()`` and
/// ``versionsForStore(type:at:configuration:)`` throw its ``ModelError``.
public protocol ModelVersion: CaseIterable, Hashable, Sendable {
    /// The model file whose versions the cases name.
    associatedtype ModelFile: ModelFileManager

    /// The version stores are migrated to (default: the last case).
    static var currentVersion: Self { get }

    /// The version's name in the `.xcdatamodeld` (`"School 2"`; default: the raw value of a
    /// `String` enum).
    var versionName: String { get }

    /// The model of this version: for ``currentVersion``, `ModelFile.model` (with its typed
    /// classes); for the others, the named version of the file, with dynamic objects (default).
    var modelVersion: ManagedObjectModel { get throws }

    /// The stages from the oldest version to the newest, in the order they run; they make
    /// ``migrationManager()``.
    static func migrationStages() throws -> [any MigrationStage]
}

extension ModelVersion where Self: RawRepresentable, RawValue == String {
    /// The raw value.
    public var versionName: String { rawValue }
}

extension ModelVersion {
    /// A stage's handler: it runs in a private context of the store at the stage's source (pre)
    /// or destination (post) version; what it changes is saved.
    public typealias MigrationHandler = @Sendable (ManagedObjectContext) throws -> Void

    /// The last case.
    public static var currentVersion: Self {
        guard let last = allCases.reversed().first else {
            preconditionFailure("\(Self.self) has no cases and cannot be a model version")
        }
        return last
    }

    /// ``ModelFileManager/model`` for ``currentVersion``; otherwise the version named
    /// ``versionName`` of the model file, loaded once (``ModelFileManager/loadModel(version:)``).
    ///
    /// - Throws: ``ModelError`` when the model file has no such version or cannot be loaded.
    public var modelVersion: ManagedObjectModel {
        get throws {
            if self == Self.currentVersion { return try ModelFile.checkedModel() }
            return try ModelFile.loadModel(version: versionName)
        }
    }

    /// A ``StagedMigrationManager`` of ``migrationStages()``, for
    /// ``StoreOptions/stagedMigrationManager``.
    ///
    /// ```swift
    /// let options = StoreOptions(stagedMigrationManager: try SchoolVersion.migrationManager())
    /// ```
    public static func migrationManager() throws -> StagedMigrationManager {
        StagedMigrationManager(try migrationStages())
    }

    /// A stage from this version to `toVersion` (a ``CustomMigrationStage``; without handlers it
    /// migrates by inference, as a lightweight stage).
    ///
    /// - Parameters:
    ///   - toVersion: the version the stage ends at.
    ///   - label: names the stage in logs and errors.
    ///   - preMigration: runs before the step, in a context on this version's schema; its
    ///     changes are saved.
    ///   - postMigration: runs after the step, in a context on `toVersion`'s schema; its
    ///     changes are saved.
    ///
    /// Handlers see dynamic objects (`value(forKey:)`, `setValue(_:forKey:)`): typed classes may
    /// not match an older version. Unlike RCDataKit's, a handler that throws fails the stage
    /// with ``CoherenceError/Code/migrationFailed`` naming `label`.
    public func migrationStage(
        toVersion: Self, label: String, preMigration: MigrationHandler? = nil, postMigration: MigrationHandler? = nil
    ) throws -> CustomMigrationStage {
        var stage = CustomMigrationStage(migratingFrom: try modelVersion, to: try toVersion.modelVersion, label: label)
        stage.willMigrateHandler = preMigration
        stage.didMigrateHandler = postMigration
        return stage
    }

    /// The versions whose model matches the store at `storeURL`, read from its metadata without
    /// adding the store (zero or one version, unless two versions have the same schema).
    ///
    /// ```swift
    /// #expect(try SchoolVersion.versionsForStore(type: .sqlite, at: url) == [.v1])
    /// ```
    ///
    /// - Parameter configuration: the model configuration the store holds (nil: every entity).
    /// - Throws: ``CoherenceError`` when the store cannot be read (`.storeNotFound`, …), and
    ///   ``ModelError`` when a version cannot be loaded.
    public static func versionsForStore(type: StoreType, at storeURL: URL, configuration: String? = nil) throws -> [Self] {
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: type, at: storeURL)
        return try allCases.filter { version in
            try version.modelVersion.isConfiguration(withName: configuration, compatibleWithStoreMetadata: metadata)
        }
    }

    /// The versions whose model is the coordinator's (the same version hash).
    ///
    /// - Throws: ``ModelError`` when a version cannot be loaded.
    public static func versionsForStore(coordinator: PersistentStoreCoordinator) throws -> [Self] {
        let hash = coordinator.managedObjectModel.versionHash
        return try allCases.filter { try $0.modelVersion.versionHash == hash }
    }
}
