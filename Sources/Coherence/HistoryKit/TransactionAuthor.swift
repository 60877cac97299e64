/// A transaction author as a type (RCDataKit's `TransactionAuthor`): its ``name`` becomes a
/// context's ``ManagedObjectContext/transactionAuthor`` and name, and the author a
/// ``PersistentHistoryTracker`` records progress for.
///
/// ```swift
/// extension TransactionAuthor {
///     static let importer: TransactionAuthor = "importer"
/// }
/// let context = connect.backgroundContext(author: .importer)
/// ```
public struct TransactionAuthor: Sendable, Hashable, Identifiable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The author's name, as recorded in persistent history.
    public var name: String
    /// The name.
    public var id: String { name }

    /// An author named `name`.
    public init(_ name: String) { self.name = name }

    /// An author named by a string literal.
    public init(stringLiteral value: String) { self.name = value }

    /// The name.
    public var description: String { name }

    /// The view context's author, `"viewContext"`.
    public static let viewContext: TransactionAuthor = "viewContext"
}

extension ManagedObjectContext {
    /// Makes `author` the context's ``transactionAuthor`` and ``name`` (RCDataKit's `setAuthor`).
    public func setAuthor(_ author: TransactionAuthor) {
        transactionAuthor = author.name
        name = author.name
    }

    /// The context's ``transactionAuthor`` as a ``TransactionAuthor`` (nil without one).
    public func author() -> TransactionAuthor? { transactionAuthor.map { TransactionAuthor($0) } }
}

extension PersistentStack {
    /// A new background context whose author and name are `author` (RCDataKit's
    /// `backgroundContext(author:)`).
    public func backgroundContext(author: TransactionAuthor) -> ManagedObjectContext {
        let context = newBackgroundContext()
        context.setAuthor(author)
        return context
    }
}
