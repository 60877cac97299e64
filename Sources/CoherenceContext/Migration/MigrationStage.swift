import Foundation

/// A step of a ``StagedMigrationManager``: a ``LightweightMigrationStage`` or a
/// ``CustomMigrationStage`` (Core Data's `NSMigrationStage`).
public protocol MigrationStage: Sendable {
    /// A name for logs and errors.
    var label: String { get }
    /// The model-to-model steps of the stage, in order.
    var steps: [MigrationStep] { get }
}

/// One migration from a model version to the next, with the stage's handlers.
public struct MigrationStep: Sendable {
    /// The version the store is at before the step.
    public let source: ManagedObjectModel
    /// The version the store is at after the step.
    public let destination: ManagedObjectModel
    /// Runs in a context on the source version before the step; its changes are saved.
    public let willMigrate: (@Sendable (ManagedObjectContext) throws -> Void)?
    /// Runs in a context on the destination version after the step; its changes are saved.
    public let didMigrate: (@Sendable (ManagedObjectContext) throws -> Void)?
}

/// Stages that need no code: the store is migrated by inference from each version to the next
/// (Core Data's `NSLightweightMigrationStage`).
///
/// ```swift
/// let stage = LightweightMigrationStage([v1, v2, v3])
/// ```
public struct LightweightMigrationStage: MigrationStage {
    /// The versions, oldest first.
    public let versions: [ManagedObjectModel]
    /// A name for logs and errors.
    public var label: String

    /// Stages from each of `versions` (oldest first) to the next.
    public init(_ versions: [ManagedObjectModel], label: String = "lightweight") {
        self.versions = versions
        self.label = label
    }

    /// From each version to the next, without handlers.
    public var steps: [MigrationStep] {
        zip(versions, versions.dropFirst()).map { MigrationStep(source: $0, destination: $1, willMigrate: nil, didMigrate: nil) }
    }
}

/// A stage with code around an inferred migration (Core Data's `NSCustomMigrationStage`):
/// ``willMigrateHandler`` runs on the old version before it, ``didMigrateHandler`` on the new
/// one after it. Handlers see dynamic objects (`value(forKey:)`, `setValue(_:forKey:)`), since
/// typed classes may not exist for old versions.
///
/// ```swift
/// var stage = CustomMigrationStage(migratingFrom: v2, to: v3, label: "split names")
/// stage.didMigrateHandler = { context in
///     for person in try context.fetch(FetchRequest<ManagedObject>(entityName: "Person")) {
///         let full = try person.value(forKey: "name") as? String ?? ""
///         try person.setValue(full.split(separator: " ").first.map(String.init), forKey: "firstName")
///     }
/// }
/// ```
public struct CustomMigrationStage: MigrationStage {
    /// The version before the stage.
    public let currentModel: ManagedObjectModel
    /// The version after the stage.
    public let nextModel: ManagedObjectModel
    /// A name for logs and errors.
    public var label: String
    /// Runs in a context on the old version before the migration; its changes are saved.
    public var willMigrateHandler: (@Sendable (ManagedObjectContext) throws -> Void)?
    /// Runs in a context on the new version after the migration; its changes are saved.
    public var didMigrateHandler: (@Sendable (ManagedObjectContext) throws -> Void)?

    /// A stage from `currentModel` to `nextModel`.
    public init(migratingFrom currentModel: ManagedObjectModel, to nextModel: ManagedObjectModel, label: String = "custom") {
        self.currentModel = currentModel
        self.nextModel = nextModel
        self.label = label
    }

    /// The one step, with the handlers.
    public var steps: [MigrationStep] {
        [MigrationStep(source: currentModel, destination: nextModel, willMigrate: willMigrateHandler, didMigrate: didMigrateHandler)]
    }
}
