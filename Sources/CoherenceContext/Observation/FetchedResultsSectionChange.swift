import Foundation

/// One section's change in a ``FetchedResultsDifference``: a section appeared (``FetchedResultsChangeType/insert``,
/// at its index after the change) or went away (``FetchedResultsChangeType/delete``, at its
/// index before the change).
public struct FetchedResultsSectionChange: Sendable, Hashable, CustomStringConvertible {
    /// `insert` or `delete`.
    public let type: FetchedResultsChangeType
    /// The section's index: after the change for an insert, before it for a delete.
    public let sectionIndex: Int
    /// The section's name.
    public let name: String

    /// Creates a section change.
    public init(type: FetchedResultsChangeType, sectionIndex: Int, name: String) {
        self.type = type
        self.sectionIndex = sectionIndex
        self.name = name
    }

    /// The type, index and name, for example `insert section 2 "B"`.
    public var description: String { "\(type) section \(sectionIndex) \"\(name)\"" }
}
