import Foundation

/// Receives a ``FetchedResultsController``'s changes, on its context's executor (Core Data's
/// `NSFetchedResultsControllerDelegate`). Every method has an empty default implementation.
///
/// For one change the controller calls, in order: ``controllerWillChangeContent(_:)``, the
/// section changes, the object changes (deletes, inserts, moves, updates),
/// ``controllerDidChangeContent(_:)``, then ``controller(_:didChangeContentWith:)`` with the
/// snapshot. The controller's results are already the new ones during these calls; the old
/// index paths count positions before the change.
///
/// ```swift
/// final class PeopleList: FetchedResultsControllerDelegate {
///     func controller(_ controller: FetchedResultsController<Person>, didChange object: Person,
///                     at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {
///         print(type, object.name)
///     }
/// }
/// ```
public protocol FetchedResultsControllerDelegate<ResultType>: AnyObject {
    /// The controller's object type.
    associatedtype ResultType: ManagedObject

    /// Changes are about to be reported.
    func controllerWillChangeContent(_ controller: FetchedResultsController<ResultType>)

    /// A section was inserted (at `sectionIndex` after the change) or deleted (at `sectionIndex`
    /// before it).
    func controller(
        _ controller: FetchedResultsController<ResultType>, didChange section: FetchedResultsSection<ResultType>,
        atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType)

    /// An object was inserted, deleted, moved or updated: `indexPath` is where it was (nil for an
    /// insert), `newIndexPath` where it is (nil for a delete).
    func controller(
        _ controller: FetchedResultsController<ResultType>, didChange object: ResultType, at indexPath: IndexPath?,
        for type: FetchedResultsChangeType, newIndexPath: IndexPath?)

    /// Every change of this round was reported.
    func controllerDidChangeContent(_ controller: FetchedResultsController<ResultType>)

    /// The results after the change, with the difference, as a `Sendable` snapshot.
    func controller(_ controller: FetchedResultsController<ResultType>, didChangeContentWith snapshot: FetchedResultsSnapshot)
}

extension FetchedResultsControllerDelegate {
    /// Does nothing.
    public func controllerWillChangeContent(_ controller: FetchedResultsController<ResultType>) {}

    /// Does nothing.
    public func controller(
        _ controller: FetchedResultsController<ResultType>, didChange section: FetchedResultsSection<ResultType>,
        atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType
    ) {}

    /// Does nothing.
    public func controller(
        _ controller: FetchedResultsController<ResultType>, didChange object: ResultType, at indexPath: IndexPath?,
        for type: FetchedResultsChangeType, newIndexPath: IndexPath?
    ) {}

    /// Does nothing.
    public func controllerDidChangeContent(_ controller: FetchedResultsController<ResultType>) {}

    /// Does nothing.
    public func controller(_ controller: FetchedResultsController<ResultType>, didChangeContentWith snapshot: FetchedResultsSnapshot) {}
}
