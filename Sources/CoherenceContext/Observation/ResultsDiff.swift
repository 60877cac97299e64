import Foundation

/// A row of a fetched-results controller's results: the object, its section name and its sort
/// values (read once, when the object is placed). Not generic, so that the results' arrays are
/// handled by specialized code.
struct ResultRow {
    let object: ManagedObject
    var section: String
    var sortValues: RowOrder.Values
}

/// Sections of ordered results: runs of equal names over a flat list.
struct SectionLayout: Equatable {
    /// Section names, in order.
    var names: [String] = []
    /// Where each section starts in the flat list.
    var starts: [Int] = []
    /// The flat list's length.
    var count = 0

    /// The layout of `names` (one per row, in order): a section per run of equal names.
    init(rowSectionNames: some Sequence<String>) {
        var n = 0
        for name in rowSectionNames {
            if names.last != name || names.isEmpty {
                names.append(name)
                starts.append(n)
            }
            n += 1
        }
        count = n
    }

    init() {}

    /// The range of rows of section `s`.
    func range(of s: Int) -> Range<Int> { starts[s]..<(s + 1 < starts.count ? starts[s + 1] : count) }

    /// The index path of the row at flat index `i`.
    func indexPath(of i: Int) -> IndexPath {
        // The last section starting at or before i.
        var lo = 0, hi = starts.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if starts[mid] <= i { lo = mid } else { hi = mid - 1 }
        }
        return IndexPath(indexes: [lo, i - starts[lo]])
    }

    /// The flat index of an index path, or nil when it is out of range.
    func flatIndex(of path: IndexPath) -> Int? {
        guard path.count == 2, path[0] >= 0, path[0] < names.count else { return nil }
        let r = range(of: path[0])
        let i = r.lowerBound + path[1]
        return path[1] >= 0 && r.contains(i) ? i : nil
    }

    /// A name that appears in two runs (results whose order does not group the sections), or nil.
    var repeatedName: String? {
        var seen = Set<String>()
        for name in names where !seen.insert(name).inserted { return name }
        return nil
    }

    /// Section identities for diffing: the name and, for a repeated name, its occurrence.
    var identities: [SectionIdentity] {
        var occurrences: [String: Int] = [:]
        return names.map { name in
            let k = occurrences[name, default: 0]
            occurrences[name] = k + 1
            return SectionIdentity(name: name, occurrence: k)
        }
    }
}

struct SectionIdentity: Hashable {
    var name: String
    var occurrence: Int
}

/// One change between two lists, by flat index.
struct FlatChange {
    var type: FetchedResultsChangeType
    var old: Int?
    var new: Int?
}

/// The difference between two ordered lists of keys.
enum ResultsDiff {
    /// Where each key of `new` is in `old` (-1: not there), matching each old key once.
    static func origins<K: Hashable>(old: [K], new: [K]) -> [Int] {
        var oldIndex: [K: Int] = [:]
        oldIndex.reserveCapacity(old.count)
        for (i, k) in old.enumerated() { oldIndex[k] = i }
        return new.map { k in oldIndex.removeValue(forKey: k) ?? -1 }
    }

    /// Changes that turn a list of `oldCount` keys into a new one, given where each new key was
    /// (`origin`, -1 for a new key): keys of the old list no new key comes from are deleted, new
    /// keys inserted; of the keys in both, the fewest are moved so that the rest keep their order
    /// (preferring to move changed keys: an unchanged key moves only when changed ones cannot
    /// make room), and changed ones that do not move are updated.
    ///
    /// - Parameter changed: whether the key at each new index changed (reported when kept).
    /// - Complexity: O((*n* + *m*) log *n*) for lists of *n* and *m* keys.
    static func changes(oldCount: Int, origin: [Int], changed: [Bool]) -> [FlatChange] {
        var matched = [Bool](repeating: false, count: oldCount)
        var changes: [FlatChange] = []
        // Keys in both lists, in new order: (old index, new index).
        var survivors: [(old: Int, new: Int)] = []
        survivors.reserveCapacity(min(oldCount, origin.count))
        for (j, i) in origin.enumerated() {
            if i >= 0 {
                matched[i] = true
                survivors.append((i, j))
            } else {
                changes.append(FlatChange(type: .insert, old: nil, new: j))
            }
        }
        for i in 0..<oldCount where !matched[i] { changes.append(FlatChange(type: .delete, old: i, new: nil)) }
        // Unchanged survivors weigh more than all changed ones together, so the kept sequence
        // holds as many unchanged keys as possible.
        let heavy = survivors.count + 1
        let kept = heaviestIncreasing(survivors.map(\.old), weight: { changed[survivors[$0].new] ? 1 : heavy }, domain: oldCount)
        for (s, pair) in survivors.enumerated() {
            if !kept[s] {
                changes.append(FlatChange(type: .move, old: pair.old, new: pair.new))
            } else if changed[pair.new] {
                changes.append(FlatChange(type: .update, old: pair.old, new: pair.new))
            }
        }
        return changes
    }

    /// Which elements of `values` (distinct, each in `0..<domain`) form the increasing
    /// subsequence of greatest total weight.
    /// - Complexity: O(*n* log `domain`), with a Fenwick tree of prefix maxima.
    static func heaviestIncreasing(_ values: [Int], weight: (Int) -> Int, domain: Int) -> [Bool] {
        var kept = [Bool](repeating: false, count: values.count)
        guard !values.isEmpty else { return kept }
        // tree[i]: the best (total, element) among values in a range ending at i (1-based).
        var tree = [(total: Int, element: Int)](repeating: (0, -1), count: domain + 1)
        var previous = [Int](repeating: -1, count: values.count)
        var best = (total: 0, element: -1)
        for (e, v) in values.enumerated() {
            // The best chain ending below v.
            var q = (total: 0, element: -1)
            var i = v
            while i > 0 {
                if tree[i].total > q.total { q = tree[i] }
                i -= i & -i
            }
            let total = q.total + weight(e)
            previous[e] = q.element
            if total > best.total { best = (total, e) }
            i = v + 1
            while i <= domain {
                if total > tree[i].total { tree[i] = (total, e) }
                i += i & -i
            }
        }
        var e = best.element
        while e >= 0 {
            kept[e] = true
            e = previous[e]
        }
        return kept
    }

    /// Section changes that turn the `old` layout's sections into the `new` one's: sections
    /// only in one are deleted or inserted; sections in both whose order changed are deleted
    /// and inserted again.
    static func sectionChanges(old: SectionLayout, new: SectionLayout) -> [FetchedResultsSectionChange] {
        let o = old.identities, n = new.identities
        guard o != n else { return [] }
        var oldIndex: [SectionIdentity: Int] = [:]
        for (i, s) in o.enumerated() { oldIndex[s] = i }
        var survivors: [(old: Int, new: Int)] = []
        var inNew = Set<Int>()
        var result: [FetchedResultsSectionChange] = []
        for (j, s) in n.enumerated() {
            if let i = oldIndex[s] {
                survivors.append((i, j))
                inNew.insert(i)
            } else {
                result.append(FetchedResultsSectionChange(type: .insert, sectionIndex: j, name: s.name))
            }
        }
        let kept = heaviestIncreasing(survivors.map(\.old), weight: { _ in 1 }, domain: o.count)
        var deleted = o.indices.filter { !inNew.contains($0) }
        for (s, pair) in survivors.enumerated() where !kept[s] {
            deleted.append(pair.old)
            result.append(FetchedResultsSectionChange(type: .insert, sectionIndex: pair.new, name: n[pair.new].name))
        }
        let deletes = deleted.sorted().map { FetchedResultsSectionChange(type: .delete, sectionIndex: $0, name: o[$0].name) }
        return deletes + result.sorted { $0.sectionIndex < $1.sectionIndex }
    }

    /// The difference between two states of a controller's results, and the flat indexes of
    /// each object change (in the same order): deletes, inserts, moves, updates, each by
    /// position. `origin` says where each new row was in `old` (-1: it was not), `changed`
    /// whether each new row's object changed (an update when it keeps its place).
    static func difference(
        old: [ResultRow], _ oldLayout: SectionLayout, new: [ResultRow], _ newLayout: SectionLayout, origin: [Int], changed: [Bool]
    ) -> (difference: FetchedResultsDifference, flat: [FlatChange]) {
        var flat = changes(oldCount: old.count, origin: origin, changed: changed)
        func rank(_ c: FlatChange) -> (Int, Int) {
            switch c.type {
            case .delete: return (0, c.old ?? 0)
            case .insert: return (1, c.new ?? 0)
            case .move: return (2, c.new ?? 0)
            case .update: return (3, c.new ?? 0)
            }
        }
        flat.sort { rank($0) < rank($1) }
        // A changed object that stays in place but changes section moves (as in Core Data).
        let oldSections = oldLayout.identities, newSections = newLayout.identities
        for k in flat.indices where flat[k].type == .update {
            if let o = flat[k].old, let n = flat[k].new,
                oldSections[oldLayout.indexPath(of: o).section] != newSections[newLayout.indexPath(of: n).section]
            {
                flat[k].type = .move
            }
        }
        let objectChanges = flat.map { c in
            FetchedResultsChange(
                type: c.type, objectID: (c.new.map { new[$0].object } ?? old[c.old ?? 0].object).objectID,
                indexPath: c.old.map { oldLayout.indexPath(of: $0) }, newIndexPath: c.new.map { newLayout.indexPath(of: $0) })
        }
        return (
            FetchedResultsDifference(sectionChanges: sectionChanges(old: oldLayout, new: newLayout), objectChanges: objectChanges), flat
        )
    }
}
