import Foundation

/// One section of a ``FetchedResultsController``'s results (Core Data's
/// `NSFetchedResultsSectionInfo`): the objects whose section name is ``name``, in order.
///
/// ```swift
/// for section in controller.sections {
///     print(section.name, section.numberOfObjects)
/// }
/// ```
public struct FetchedResultsSection<ResultType: ManagedObject> {
    /// The section's name (the value of the controller's section key path; "" without one).
    public let name: String
    /// The section's objects, in the controller's order.
    public let objects: [ResultType]
    /// The number of objects.
    public var numberOfObjects: Int { objects.count }
    /// The section's index title: the first letter of its name, upper-cased ("" for an empty
    /// name), as Core Data's default.
    public var indexTitle: String { name.first.map { String($0).uppercased() } ?? "" }

    /// Creates a section.
    public init(name: String, objects: [ResultType]) {
        self.name = name
        self.objects = objects
    }
}
