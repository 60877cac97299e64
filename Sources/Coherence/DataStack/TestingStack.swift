import Foundation

/// A ``DataStack`` on a new SQLite store in a directory of its own, for tests (RCDataKit's
/// `TestingStack`): stacks never share a store, even with one test name in tests running in
/// parallel, and the directory is deleted when the stack goes away.
///
/// ```swift
/// @Test func importsStudents() throws {
///     let stack = try TestingStack(SchoolModel.self, bundle: .module, testName: "importsStudents")
///     // stack.viewContext, stack.backgroundContext(author:) …
/// }
/// ```
///
/// The store is `<temporary directory>/<bundle identifier or "DataStackTesting">/<testName>/<fileID>/<fileID>.sqlite`.
/// Unlike RCDataKit's, a stack never deletes another stack's files (RCDataKit empties the
/// test's directory, so two stacks with one test name corrupt each other).
public final class TestingStack: DataStack {
    /// ``TransactionAuthor/viewContext``.
    public let mainContextAuthor: TransactionAuthor = .viewContext
    /// The container: a ``GenericPersistentContainer`` with the ``ContextStrategy/Direct`` strategy.
    public let container: any PersistentStack
    /// The stack's own directory, holding its store (deleted with the stack).
    public let directoryLocation: URL
    /// Names the stack's directory and store file.
    public let fileID: UUID

    /// The store's file.
    public var storeURL: URL { directoryLocation.appendingPathComponent(fileID.uuidString + ".sqlite") }

    /// A stack on `model`'s ``ModelManager/model`` with a new, empty store.
    ///
    /// - Parameters:
    ///   - model: the model.
    ///   - bundle: names the directory of the stacks of a test bundle (its identifier).
    ///   - testName: names the directory of the test's stacks (default: the calling function);
    ///     a `/` becomes `_`.
    public init<Model: ModelManager>(_ model: Model.Type, bundle: Bundle = .main, testName: String = #function) throws {
        let fileID = UUID()
        self.fileID = fileID
        directoryLocation = FileManager.default.temporaryDirectory
            .appendingPathComponent(Self.component(bundle.bundleIdentifier ?? "DataStackTesting"), isDirectory: true)
            .appendingPathComponent(Self.component(testName), isDirectory: true)
            .appendingPathComponent(fileID.uuidString, isDirectory: true)
        let container = GenericPersistentContainer<ContextStrategy.Direct>(
            name: Self.component(testName), managedObjectModel: try Model.checkedModel())
        self.container = container
        try container.attachPersistentStore(
            at: directoryLocation, for: StoreConfiguration(fileName: fileID.uuidString + ".sqlite"))
        _ = viewContext  // names the view context and gives it its author
    }

    /// Detaches the store and deletes the stack's directory.
    deinit {
        try? container.detach(persistentStores: container.persistentStoreCoordinator.persistentStores)
        try? FileManager.default.removeItem(at: directoryLocation)
    }

    /// `name` as one path component: `/` and NUL become `_`; an empty name, `.` or `..` becomes
    /// `"test"`.
    private static func component(_ name: String) -> String {
        let safe = String(name.map { $0 == "/" || $0 == "\u{0}" ? "_" : $0 })
        return safe.isEmpty || safe == "." || safe == ".." ? "test" : safe
    }
}
