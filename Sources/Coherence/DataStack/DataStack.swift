import Foundation

/// A container with a view-context author, and contexts named after their authors (RCDataKit's
/// `DataStack`). ``BasicDataStack``, ``PreviewStack`` and ``TestingStack`` conform; so can an
/// app's own type around any ``PersistentStack`` (a ``GenericConnect`` for instance).
///
/// ```swift
/// extension TransactionAuthor {
///     static let app: TransactionAuthor = "app"
///     static let importer: TransactionAuthor = "importer"
/// }
/// let stack = try BasicDataStack(SchoolModel.self, mainAuthor: .app)
/// let view = stack.viewContext                                 // named "ViewContext", author "app"
/// let importer = try stack.backgroundContext(author: .importer)  // named and authored "importer"
/// ```
public protocol DataStack: Sendable {
    /// The container the stack wraps.
    var container: any PersistentStack { get }
    /// The author of the view context's saves.
    var mainContextAuthor: TransactionAuthor { get }
}

extension DataStack {
    /// The container's view context, named `"ViewContext"`, with ``mainContextAuthor`` as its
    /// transaction author (set on every access, as RCDataKit does).
    ///
    /// Do not change its name or author: the history tracker tells the view context's saves
    /// from the others' by the author.
    public var viewContext: ManagedObjectContext {
        let context = container.viewContext
        context.name = "ViewContext"
        context.transactionAuthor = mainContextAuthor.name
        return context
    }

    /// A new background context of the container whose name and transaction author are
    /// `author`.
    ///
    /// - Throws: ``CoherenceError/Code/invalidRequest`` when `author` is ``mainContextAuthor``
    ///   (RCDataKit asserts): a tracker never merges its own author's transactions, so the view
    ///   context would miss what such a context saves in another process.
    public func backgroundContext(author: TransactionAuthor) throws(CoherenceError) -> ManagedObjectContext {
        guard author != mainContextAuthor else {
            throw CoherenceError(
                .invalidRequest,
                "A background context cannot have the view context's author '\(author.name)'; give it an author of its own.")
        }
        let context = container.newBackgroundContext()
        context.setAuthor(author)
        return context
    }
}
