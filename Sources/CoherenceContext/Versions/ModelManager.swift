import Foundation

/// A type that provides a ``ManagedObjectModel`` (RCDataKit's `ModelManager`): the stacks
/// (`BasicDataStack`, `PreviewStack`, `TestingStack`) take the type and use its ``model``.
///
/// ```swift
/// enum Notes: ModelManager {
///     static let model = NotesModel.make()   // built in code, once
/// }
/// ```
///
/// Keep the model in a stored property: every stack of the type then shares one model, and its
/// typed classes are bound once. For an Xcode model file, adopt ``ModelFileManager``, which
/// loads and keeps it for you.
public protocol ModelManager {
    /// The model, created once.
    static var model: ManagedObjectModel { get }
}

extension ModelManager {
    /// ``model``, or the reason it could not be loaded: a ``ModelFileManager`` whose file is
    /// missing or broken has an empty ``model``, and this throws the ``ModelError`` instead.
    package static func checkedModel() throws(ModelError) -> ManagedObjectModel {
        let model = Self.model
        if model.entities.isEmpty, let failure = ModelFileCache.shared.failure(of: Self.self) { throw failure }
        return model
    }
}
