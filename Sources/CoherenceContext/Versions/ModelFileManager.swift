import Foundation

/// A ``ModelManager`` for an Xcode model file, `<modelName>.xcdatamodeld` (or `.xcdatamodel`)
/// in ``bundle`` (RCDataKit's `ModelFileManager`).
///
/// ```swift
/// enum SchoolModel: ModelFileManager {
///     static var bundle: Bundle { .module }
///     static var modelName: String { "School" }
///     static var classes: [ManagedObject.Type] { [Student.self, Teacher.self] }
/// }
/// let stack = try BasicDataStack(SchoolModel.self, mainAuthor: "app")
/// ```
///
/// Unlike RCDataKit's, it loads the ``ModelManager/model`` itself, once per type: the file's
/// current version, with ``classes`` as typed subclasses. A file that cannot be loaded never
/// crashes: ``ModelManager/model`` is then empty, ``loadModel(version:)`` and the stacks throw
/// the ``ModelError``.
public protocol ModelFileManager: ModelManager {
    /// The bundle holding the model file (`Bundle.module` in a Swift package that ships it with
    /// `resources: [.copy("School.xcdatamodeld")]`).
    static var bundle: Bundle { get }
    /// The model file's name, without `.xcdatamodeld`.
    static var modelName: String { get }
    /// Typed subclasses for the current version's entities (default: none, every object is a
    /// dynamic ``ManagedObject``).
    static var classes: [ManagedObject.Type] { get }
}

extension ModelFileManager {
    /// No typed classes.
    public static var classes: [ManagedObject.Type] { [] }

    /// The model file's current version with ``classes``, loaded on first use and kept: every
    /// call returns the same model. Empty when the file cannot be loaded (``loadModel(version:)``
    /// throws the reason).
    public static var model: ManagedObjectModel {
        (try? loadModel()) ?? ManagedObjectModel(empty: ())
    }

    /// Loads a version of the model file once per type and version and keeps it.
    ///
    /// - Parameter version: a version of the `.xcdatamodeld` (`"School 2"`); nil loads the
    ///   current version with ``classes`` (the default ``ModelManager/model``). Named versions
    ///   are loaded without typed classes: their objects are dynamic ``ManagedObject``s, as
    ///   migration code needs (typed classes follow the current version).
    /// - Throws: ``ModelError`` `.modelNotFound` or `.modelParse`, naming the file and version.
    ///
    /// ```swift
    /// let first = try SchoolModel.loadModel(version: "School")
    /// ```
    public static func loadModel(version: String? = nil) throws(ModelError) -> ManagedObjectModel {
        try ModelFileCache.shared.model(of: Self.self, version: version) { () throws(ModelError) in
            try ManagedObjectModel(named: modelName, in: bundle, version: version, classes: version == nil ? classes : [])
        }
    }
}
