/// The objects of one fetch result. When a relationship fault fires on one of them, the
/// relationship is loaded for all of them in one query (so walking 100,000 fetched objects
/// issues one query per relationship, not 100,000).
///
/// Members hold their group (`_group`); the group does not hold its members. A member clears
/// its entry when it leaves the group (``ManagedObject/_leaveGroup()``) or is deallocated, so
/// every entry left names a live object. (A group that owned its members made a cycle with
/// them: every fetched object stayed alive after its context was gone.)
///
/// A group is used on its context's executor only: filled by a fetch, read when a relationship
/// fault fires. A member leaves it when its context stops registering it (a reset, a delete
/// saved, a merge, an object replaced in the identity map), on that executor too. So a member
/// that is released on another thread (a notification's object set kept by an observer, say)
/// and deallocated there no longer belongs to a group its context may be using, and its
/// `deinit` touches no group. Only members whose context is gone (the identity map released
/// them as the context went) still clear their own entries from `deinit`, on whatever thread
/// releases them (``removeMemberOfAGoneContext(at:)``, under a lock): each its own entry, in a
/// list nothing else reads or grows by then. (Renaming an object in the map, temporary ID to
/// permanent, keeps it registered and in its group.)
package final class FetchGroup {
    // `@exclusivity(unchecked)`: used on the objects' context executor only.
    /// The members in fetch order; nil where a member left or was deallocated.
    @exclusivity(unchecked) private var members: [Unmanaged<ManagedObject>?] = []
    /// Serializes ``removeMemberOfAGoneContext(at:)``.
    private let removals = LockedValue(())
    /// Relationship slots already loaded for the whole group.
    @exclusivity(unchecked) package var loadedSlots: Set<Int> = []

    init() {}

    /// Makes room for `count` more members.
    package func reserveCapacity(_ count: Int) {
        members.reserveCapacity(members.count + count)
    }

    /// Gives back the room reserved for members that did not come (the list is kept as long
    /// as any member lives).
    package func trimCapacity() {
        if members.capacity > 2 * members.count + 16 { members = members.copiedToFit() }
    }

    /// Makes `object`, which is in no group, a member (it holds a strong reference to the
    /// group, released when it leaves or goes away).
    /// - Complexity: O(1) amortized.
    @inline(__always)
    package func add(_ object: ManagedObject) {
        assert(object._groupReference == nil, "An object is in one fetch group at most.")
        object._groupReference = .passRetained(self)
        object._groupIndex = UInt32(truncatingIfNeeded: members.count)
        members.append(.passUnretained(object))
    }

    /// Forgets the member at `index`, which is leaving the group, on the context's executor.
    @inline(__always)
    package func removeMember(at index: UInt32) {
        let i = Int(index)
        if i < members.count { members[i] = nil }
    }

    /// Forgets the member at `index`, which is being deallocated after its context went (see
    /// the type's notes), on whatever thread released it. Under a lock: members deallocated on
    /// several threads at once clear their entries at once, and each write to the list may
    /// find its storage shared for a moment (and copy it) while another thread writes. While
    /// the context lives no member is deallocated in its group, and the context's own
    /// removals, appends and walks need no lock.
    package func removeMemberOfAGoneContext(at index: UInt32) {
        let i = Int(index)
        removals.withLock { _ in
            if i < members.count { members[i] = nil }
        }
    }

    /// The live members, in fetch order. Members added or removed while iterating are seen or
    /// skipped as they come (the iteration reads the group as it goes).
    package var objects: Members { Members(group: self) }

    package struct Members: Sequence {
        let group: FetchGroup

        package struct Iterator: IteratorProtocol {
            let group: FetchGroup
            var index = 0
            package mutating func next() -> ManagedObject? {
                while index < group.members.count {
                    defer { index += 1 }
                    if let m = group.members[index] { return m.takeUnretainedValue() }
                }
                return nil
            }
        }

        package func makeIterator() -> Iterator { Iterator(group: group) }
        package var underestimatedCount: Int { 0 }
        /// An upper bound of the number of live members.
        package var capacityHint: Int { group.members.count }
    }
}
