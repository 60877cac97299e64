import Foundation

/// The merge policy of ``ContextStrategy/Mixed``'s root context, which writes the view
/// context's saves while background contexts write the same stores directly.
///
/// A background save is merged into the root context on its queue, so a view-context save
/// already queued there is written first, against rows the background save has since moved
/// on: a version conflict that only the order of two queued blocks made. It is resolved as the
/// write after the merge would have been: property by property, the root context's values (the
/// view context's save) winning where both changed, the stored values kept where only the
/// store changed, and an object whose row was deleted dropped. A uniqueness conflict still
/// fails the write, as with ``MergePolicy/error`` (the changes stay in the root context).
final class RootWriterMergePolicy: MergePolicy, @unchecked Sendable {
    // @unchecked Sendable: no state beyond the immutable kind of the base class.

    init() { super.init(basedOn: .mergeByPropertyObjectTrump) }

    override var description: String { "MergePolicy(rootWriter)" }

    override func resolve(conflicts: [SaveConflict], in context: ManagedObjectContext) throws {
        if conflicts.contains(where: { $0.kind == .uniqueness }) {
            try MergePolicy.error.resolve(conflicts: conflicts, in: context)
        }
        try super.resolve(conflicts: conflicts, in: context)
    }
}
