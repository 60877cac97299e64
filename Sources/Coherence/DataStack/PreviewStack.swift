import Foundation

/// A ``DataStack`` on an in-memory store, for previews and quick tests (RCDataKit's
/// `PreviewStack`). Its author is ``TransactionAuthor/viewContext``.
///
/// ```swift
/// let preview = try PreviewStack(SchoolModel.self)
/// let context = try preview.backgroundContext(author: "sample data")
/// ```
///
/// Unlike RCDataKit's, which crashes, a model that cannot be loaded is a thrown ``ModelError``.
public struct PreviewStack: DataStack {
    /// ``TransactionAuthor/viewContext``.
    public let mainContextAuthor: TransactionAuthor = .viewContext
    /// The container: a ``GenericPersistentContainer`` with the ``ContextStrategy/Direct``
    /// strategy and one in-memory store.
    public let container: any PersistentStack

    /// A stack on `model`'s ``ModelManager/model``, its container named `name`.
    public init<Model: ModelManager>(_ model: Model.Type, name: String) throws {
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: name, managedObjectModel: try Model.checkedModel())
        try container.attachPersistentStore(for: StoreConfiguration(type: .inMemory))
        self.container = container
        _ = viewContext  // names the view context and gives it its author
    }

    /// A stack on the model file's model, its container named after the file.
    public init<Model: ModelFileManager>(_ model: Model.Type) throws {
        try self.init(Model.self, name: Model.modelName)
    }
}
