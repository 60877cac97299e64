/// The objects of one fetch result. When a relationship fault fires on one of them, the
/// relationship is loaded for all of them in one query (so walking 100,000 fetched objects
/// issues one query per relationship, not 100,000).
package final class FetchGroup {
    // `@exclusivity(unchecked)`: used on the objects' context executor only.
    /// The objects, in fetch order.
    @exclusivity(unchecked) package var objects: [ManagedObject]
    /// Relationship slots already loaded for the whole group.
    @exclusivity(unchecked) package var loadedSlots: Set<Int> = []

    init(objects: [ManagedObject]) { self.objects = objects }
}
