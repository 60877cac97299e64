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
