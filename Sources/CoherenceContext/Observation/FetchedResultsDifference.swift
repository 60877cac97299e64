import Foundation

/// What changed between two states of a ``FetchedResultsController``'s results: sections
/// inserted and deleted, objects inserted, deleted, moved and updated.
///
/// Old index paths and section indexes count positions before the change, new ones after it,
/// in the order a table view's batch update expects: delete the deleted sections and rows
/// (old paths), insert the inserted ones (new paths), move the moved rows, reload the updated
/// ones.
///
/// ```swift
/// for await snapshot in controller.snapshots {
///     let d = snapshot.difference
///     print("+\(d.insertedIndexPaths.count) -\(d.deletedIndexPaths.count) moved \(d.movedIndexPaths.count)")
/// }
/// ```
public struct FetchedResultsDifference: Sendable, Hashable, CustomStringConvertible {
    /// Sections inserted and deleted.
    public var sectionChanges: [FetchedResultsSectionChange]
    /// Objects inserted, deleted, moved and updated.
    public var objectChanges: [FetchedResultsChange]

    /// Creates a difference.
    public init(sectionChanges: [FetchedResultsSectionChange] = [], objectChanges: [FetchedResultsChange] = []) {
        self.sectionChanges = sectionChanges
        self.objectChanges = objectChanges
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { sectionChanges.isEmpty && objectChanges.isEmpty }

    /// Indexes (after the change) of the inserted sections.
    public var insertedSections: IndexSet { IndexSet(sectionChanges.filter { $0.type == .insert }.map(\.sectionIndex)) }
    /// Indexes (before the change) of the deleted sections.
    public var deletedSections: IndexSet { IndexSet(sectionChanges.filter { $0.type == .delete }.map(\.sectionIndex)) }
    /// New index paths of the inserted objects.
    public var insertedIndexPaths: [IndexPath] { objectChanges.filter { $0.type == .insert }.compactMap(\.newIndexPath) }
    /// Old index paths of the deleted objects.
    public var deletedIndexPaths: [IndexPath] { objectChanges.filter { $0.type == .delete }.compactMap(\.indexPath) }
    /// Old and new index paths of the moved objects.
    public var movedIndexPaths: [(from: IndexPath, to: IndexPath)] {
        objectChanges.compactMap { c in
            guard c.type == .move, let from = c.indexPath, let to = c.newIndexPath else { return nil }
            return (from, to)
        }
    }
    /// Old index paths of the updated objects (their new paths are in ``objectChanges``).
    public var updatedIndexPaths: [IndexPath] { objectChanges.filter { $0.type == .update }.compactMap(\.indexPath) }

    /// The counts, for example `sections +1 -0, objects +3 -1 moved 2 updated 4`.
    public var description: String {
        func n(_ t: FetchedResultsChangeType) -> Int { objectChanges.filter { $0.type == t }.count }
        let si = sectionChanges.filter { $0.type == .insert }.count
        return
            "sections +\(si) -\(sectionChanges.count - si), objects +\(n(.insert)) -\(n(.delete)) moved \(n(.move)) updated \(n(.update))"
    }
}
