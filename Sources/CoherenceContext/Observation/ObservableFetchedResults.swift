import Foundation
import Observation

/// The results of a fetch request as an `@Observable` object, for SwiftUI-style code: views (or
/// `withObservationTracking`) that read ``objects`` or ``sections`` are updated after every change
/// the context sees. Built on a ``FetchedResultsController``, it changes on the context's
/// executor (use a main-queue context for a UI).
///
/// ```swift
/// let people = try ObservableFetchedResults(
///     fetchRequest: FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]), managedObjectContext: viewContext)
/// withObservationTracking { print(people.objects.count) } onChange: { print("people changed") }
/// ```
@Observable
public final class ObservableFetchedResults<ResultType: ManagedObject> {
    /// The results, in order.
    public private(set) var objects: [ResultType]
    /// The results in sections.
    public private(set) var sections: [FetchedResultsSection<ResultType>]
    /// The last change's difference (empty at first).
    public private(set) var difference = FetchedResultsDifference()
    /// The controller that follows the context (its delegate and snapshots remain free to use).
    @ObservationIgnored public let controller: FetchedResultsController<ResultType>

    /// Fetches the results and follows the context's changes. Call it on the context's executor.
    ///
    /// - Throws: as ``FetchedResultsController/performFetch()``.
    public init(
        fetchRequest: FetchRequest<ResultType>, managedObjectContext context: ManagedObjectContext,
        sectionNameKeyPath: KeyPath<ResultType, String>? = nil
    ) throws(CoherenceError) {
        let controller = FetchedResultsController(
            fetchRequest: fetchRequest, managedObjectContext: context, sectionNameKeyPath: sectionNameKeyPath)
        try controller.performFetch()
        self.controller = controller
        objects = controller.fetchedObjects
        sections = controller.sections
        controller.changeHandlers.append { [weak self] snapshot in self?.update(snapshot.difference) }
    }

    /// Takes the controller's new results (on the context's executor).
    private func update(_ difference: FetchedResultsDifference) {
        objects = controller.fetchedObjects
        sections = controller.sections
        self.difference = difference
    }
}
