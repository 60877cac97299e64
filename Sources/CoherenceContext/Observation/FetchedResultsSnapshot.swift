import Foundation

/// A ``FetchedResultsController``'s results at one moment, as object IDs (safe to hand to other
/// threads), with the ``difference`` from the previous snapshot.
///
/// Resolve an ID to an object on the context's executor (`context.object(with:)`).
///
/// ```swift
/// for await snapshot in controller.snapshots {
///     print(snapshot.sections.map { "\($0.name): \($0.objectIDs.count)" }, snapshot.difference)
/// }
/// ```
public struct FetchedResultsSnapshot: Sendable, Hashable, CustomStringConvertible {
    /// One section of a snapshot.
    public struct Section: Sendable, Hashable {
        /// The section's name ("" without a section key path).
        public let name: String
        /// The IDs of the section's objects, in order.
        public let objectIDs: [ObjectID]

        /// Creates a section.
        public init(name: String, objectIDs: [ObjectID]) {
            self.name = name
            self.objectIDs = objectIDs
        }
    }

    /// The sections, in order.
    public let sections: [Section]
    /// What changed since the previous snapshot (empty for the first one, and when only
    /// temporary IDs became permanent with a save).
    public let difference: FetchedResultsDifference

    /// Creates a snapshot.
    public init(sections: [Section], difference: FetchedResultsDifference) {
        self.sections = sections
        self.difference = difference
    }

    /// Every object ID, section by section.
    public var objectIDs: [ObjectID] { sections.flatMap(\.objectIDs) }

    /// The number of objects.
    public var numberOfObjects: Int { sections.reduce(0) { $0 + $1.objectIDs.count } }

    /// The number of sections and objects, and the difference.
    public var description: String { "<FetchedResultsSnapshot \(sections.count) sections, \(numberOfObjects) objects; \(difference)>" }
}
