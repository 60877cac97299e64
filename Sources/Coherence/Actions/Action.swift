import Foundation

/// Work a ``GenericConnect`` runs for the app: a call to a web service that updates the local
/// cache, or any other task. Actions are classes shared between the caller, the connect's
/// queues and the ``ActionProxy``, so they must be `Sendable`.
public protocol Action: AnyObject, Sendable {
    /// Asks the action to stop. Called at most once, only while the action executes, when its
    /// proxy is cancelled. The default does nothing.
    func cancel()
}

extension Action {
    /// Does nothing: override to stop work in progress.
    public func cancel() {}
}

/// A general task, run on the connect's shared concurrent queue (even before `start()`).
///
/// ```swift
/// final class Ping: GenericAction {
///     func execute() throws { try service.ping() }
/// }
/// let proxy = try connect.execute(Ping())
/// ```
public protocol GenericAction: Action {
    /// Does the work; throw to finish as failed.
    func execute() throws
}

/// A general task with async work. Cancelling its proxy cancels the task it runs in (and calls
/// `cancel()`).
public protocol AsyncGenericAction: Action {
    /// Does the work; throw to finish as failed.
    func execute() async throws
}

/// A task about one managed entity, run on that entity's serial queue with an
/// ``ActionContext`` made for it.
///
/// ```swift
/// final class SyncProducts: EntityAction {
///     typealias ManagedObjectType = Product
///     func execute(context: ActionContext) throws {
///         let items = try service.fetchProducts()          // [[String: Any]]
///         try context.merge(objects: items, for: Product.self)
///     }
/// }
/// ```
public protocol EntityAction: Action {
    /// The entity's class; it decides the queue and must be a managed entity.
    associatedtype ManagedObjectType: ManagedObject
    /// Does the work with a background context made for this action.
    func execute(context: ActionContext) throws
}

/// An entity action with async work (Task cancellation reaches it).
public protocol AsyncEntityAction: Action {
    /// The entity's class; it decides the queue and must be a managed entity.
    associatedtype ManagedObjectType: ManagedObject
    /// Does the work with a background context made for this action.
    func execute(context: ActionContext) async throws
}

/// Errors of actions and action contexts.
public struct ActionError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong. A struct over a private enum: new codes never break clients.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Hashable, Sendable { case unmanagedEntity, missingEntityName, invalidValue, notRunning }
        private let kind: Kind
        /// The entity is not managed by the connect (abstract, no uniqueness attributes, or the
        /// connect is not started).
        public static let unmanagedEntity = Code(kind: .unmanagedEntity)
        /// The entity has no name.
        public static let missingEntityName = Code(kind: .missingEntityName)
        /// An incoming value has the wrong type or names an unknown attribute.
        public static let invalidValue = Code(kind: .invalidValue)
        /// The connect is stopping or stopped.
        public static let notRunning = Code(kind: .notRunning)
        /// The code's name, for example `unmanagedEntity`.
        public var description: String { kind.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// A readable explanation.
    public let message: String

    /// Creates an action error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `unmanagedEntity("Entity '<name>' not managed by Connect")`.
    public static func unmanagedEntity(_ message: String) -> ActionError { ActionError(.unmanagedEntity, message) }
    /// `missingEntityName("Entity does not have a name, cannot merge objects.")`.
    public static func missingEntityName(_ message: String) -> ActionError { ActionError(.missingEntityName, message) }

    /// The code and the message, for example
    /// `unmanagedEntity("Entity 'Note' not managed, cannot merge objects.")`.
    public var description: String { "\(code)(\"\(message)\")" }
}
