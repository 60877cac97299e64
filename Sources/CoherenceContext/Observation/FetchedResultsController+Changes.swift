import Foundation

extension FetchedResultsController {
    /// How many IDs one query checks when reading objects the context had not loaded.
    static var unloadedBatchSize: Int { 500 }

    /// A context notification (on its executor). Notifications posted while changes are being
    /// reported (a delegate that saves, say) wait until the report is over.
    func receive(_ note: Notification) {
        guard compiled != nil else { return }
        queued.append(note)
        guard !isReporting else { return }
        isReporting = true
        defer { isReporting = false }
        while !queued.isEmpty {
            let next = queued.removeFirst()
            if next.name == ManagedObjectContext.didSaveNotification {
                didSave(next)
            } else {
                objectsDidChange(next)
            }
        }
    }

    /// After a save: inserted objects have permanent IDs, which the snapshots carry, and their
    /// last edits (changes to an inserted object are not announced before it is saved) are
    /// applied.
    private func didSave(_ note: Notification) {
        guard let fetch = compiled else { return }
        let info = note.userInfo ?? [:]
        let inserted = (info[ManagedObjectContext.NotificationKey.insertedObjects] as? Set<ManagedObject> ?? [])
            .compactMap { $0 as? ResultType }.filter { relevant($0.entity, fetch) }
        let before = shared.withLock { $0.latest }
        if refetchesOnChange {
            // What was saved is now what a fetch reads: a related object's change included.
            if info.keys.contains(where: { $0 != AnyHashable(ManagedObjectContext.NotificationKey.event) }) {
                let updated = info[ManagedObjectContext.NotificationKey.updatedObjects] as? Set<ManagedObject> ?? []
                refetch(changed: Set(updated.map(ObjectIdentifier.init)), byID: false)
            }
        } else if !inserted.isEmpty {
            apply(candidates: inserted, removed: [], quiet: Set(inserted.map(ObjectIdentifier.init)), fetch: fetch)
        }
        guard let ids = info[ManagedObjectContext.NotificationKey.permanentObjectIDs] as? [ObjectID: ObjectID], !ids.isEmpty,
            shared.withLock({ $0.latest }) == before
        else { return }
        let permanent = Set(ids.values)
        guard rows.contains(where: { permanent.contains($0.object.objectID) }) else { return }
        publish(makeSnapshot(FetchedResultsDifference()), toDelegate: true)
    }

    /// Whether objects of `entity` can be in the results.
    private func relevant(_ entity: EntityDescription, _ fetch: StoreFetch) -> Bool {
        fetch.includesSubentities ? entity.isKindOf(fetch.entity) : entity === fetch.entity
    }

    /// Applies an ObjectsDidChange notification to the results and reports the difference.
    private func objectsDidChange(_ note: Notification) {
        typealias Key = ManagedObjectContext.NotificationKey
        guard let fetch = compiled else { return }
        let info = note.userInfo ?? [:]
        let context = managedObjectContext
        if info[Key.invalidatedAllObjects] as? Bool == true {
            // A reset: every object is new; results are told apart by ID.
            refetch(changed: [], byID: true)
            return
        }
        func objects(_ key: String) -> Set<ManagedObject> { info[key] as? Set<ManagedObject> ?? [] }
        func relevant(_ entity: EntityDescription) -> Bool { self.relevant(entity, fetch) }
        // Objects that may have entered, left or moved in the results.
        var candidates: [ResultType] = []
        var seen = Set<ObjectIdentifier>()
        for key in [Key.insertedObjects, Key.updatedObjects, Key.refreshedObjects] {
            for o in objects(key) where relevant(o.entity) {
                guard let t = o as? ResultType, seen.insert(ObjectIdentifier(o)).inserted else { continue }
                candidates.append(t)
            }
        }
        // Inserted objects may have been edited since they were announced (such edits are not
        // announced): they are placed again, and reported only when they move.
        var quiet = Set<ObjectIdentifier>()
        for row in rows where row.object.isInserted && seen.insert(ObjectIdentifier(row.object)).inserted {
            guard let t = row.object as? ResultType else { continue }
            candidates.append(t)
            quiet.insert(ObjectIdentifier(row.object))
        }
        var removed = Set<ObjectIdentifier>()
        for key in [Key.deletedObjects, Key.invalidatedObjects] {
            for o in objects(key) { removed.insert(ObjectIdentifier(o)) }
        }
        // IDs merged from other contexts' saves: objects that are registered are candidates; the
        // others were not loaded here, and are read if they match.
        var unloaded: [ObjectID] = []
        for key in [Key.insertedObjectIDs, Key.updatedObjectIDs] {
            for id in info[key] as? Set<ObjectID> ?? [] where relevant(id.entity) {
                if let o = context.registeredObject(for: id) {
                    guard let t = o as? ResultType, seen.insert(ObjectIdentifier(o)).inserted else { continue }
                    candidates.append(t)
                } else if !id.isTemporaryID {
                    unloaded.append(id)
                }
            }
        }
        let removesRows = !removed.isEmpty && rows.contains { removed.contains(ObjectIdentifier($0.object)) }
        if refetchesOnChange {
            // Any change may matter, a related object's too (and the fetch finds the objects the
            // context had not loaded). The event is always in the notification; the rest only
            // when something changed.
            if info.keys.contains(where: { $0 != AnyHashable(Key.event) }) { refetch(changed: seen.subtracting(quiet), byID: false) }
            return
        }
        for o in loadMatching(unloaded, fetch) where seen.insert(ObjectIdentifier(o)).inserted { candidates.append(o) }
        if candidates.isEmpty && !removesRows { return }
        apply(candidates: candidates, removed: removed, quiet: quiet, fetch: fetch)
    }

    /// Reads the objects of `ids` (objects the context had not loaded) and registers those that
    /// match the request. Runs of consecutive primary keys (an import's) are read with one query
    /// each that applies the predicate; the other objects are read by primary key, in batches of
    /// ``unloadedBatchSize``, and tested in memory. Only for a predicate that reads the objects'
    /// own attributes (see `refetchesOnChange`).
    private func loadMatching(_ ids: [ObjectID], _ fetch: StoreFetch) -> [ResultType] {
        guard !ids.isEmpty else { return [] }
        var result: [ResultType] = []
        var scattered: [ObjectID] = []
        for (_, group) in Dictionary(grouping: ids, by: \.storeIdentifier) {
            let sorted = group.sorted { $0.primaryKey < $1.primaryKey }
            var i = 0
            while i < sorted.count {
                var j = i
                while j + 1 < sorted.count && sorted[j + 1].primaryKey == sorted[j].primaryKey + 1 { j += 1 }
                if j - i + 1 >= 16 {
                    result.append(contentsOf: loadRange(sorted[i], sorted[j], fetch))
                } else {
                    scattered.append(contentsOf: sorted[i...j])
                }
                i = j + 1
            }
        }
        result.append(contentsOf: loadScattered(scattered, fetch))
        return result
    }

    /// The objects with primary keys from `first`'s to `last`'s (none of them registered) that
    /// match the request, fetched and registered.
    private func loadRange(_ first: ObjectID, _ last: ObjectID, _ fetch: StoreFetch) -> [ResultType] {
        var range = fetch
        let keys = QueryExpression.between(.path(PropertyPath(scope: 0)), lower: .object(first), upper: .object(last), upperInclusive: true)
        range.predicate = fetch.predicate.map { .and([keys, $0]) } ?? keys
        range.sortKeys = []
        range.limit = nil
        range.offset = 0
        do throws(CoherenceError) {
            let objects = try managedObjectContext.fetchObjects(range, includesPendingChanges: false, asFaults: false, prefetching: [])
            return objects.compactMap { o in o.objectID.storeIdentifier == first.storeIdentifier ? o as? ResultType : nil }
        } catch {
            managedObjectContext.reportPropagationError(error)
            return []
        }
    }

    /// The objects of `ids` (none of them registered) that match the request, read by primary
    /// key, tested in memory and registered.
    private func loadScattered(_ ids: [ObjectID], _ fetch: StoreFetch) -> [ResultType] {
        let context = managedObjectContext
        var result: [ResultType] = []
        var start = 0
        while start < ids.count {
            let batch = Array(ids[start..<min(start + Self.unloadedBatchSize, ids.count)])
            start += batch.count
            let snapshots: [ObjectID: ObjectSnapshot]
            do throws(CoherenceError) {
                snapshots = try context.source.sourceSnapshots(for: batch)
            } catch {
                context.reportPropagationError(error)
                continue
            }
            for snapshot in snapshots.values {
                guard relevant(snapshot.id.entity, fetch), context.registeredObject(for: snapshot.id) == nil else { continue }
                if let predicate = fetch.predicate, !QueryEvaluator.matches(predicate, row: SnapshotRow(snapshot: snapshot)) { continue }
                let o = context.materialize(snapshot, asFault: false, group: nil)
                o.awakeFromFetch()
                if let t = o as? ResultType { result.append(t) }
            }
        }
        return result
    }

    /// Whether an object belongs in the results (the request's entity is checked by the caller).
    private func matches(_ o: ResultType, _ fetch: StoreFetch) -> Bool {
        guard !o.isDeleted, o.managedObjectContext === managedObjectContext else { return false }
        let flags = o._state.flags
        if flags.contains(.inaccessible) { return false }
        if flags.contains(.fault) && !flags.contains(.prefilled) {
            o._willAccess()
            if o._state.flags.contains(.inaccessible) || o._state.flags.contains(.loadFailed) { return false }
        }
        guard let predicate = fetch.predicate else { return true }
        return QueryEvaluator.matches(predicate, row: o)
    }

    /// Applies changes in memory: the candidates leave the results and come back where they
    /// now sort if they match; removed objects leave. Candidates in `quiet` are reported only
    /// when they move (they may not have changed).
    private func apply(candidates: [ResultType], removed: Set<ObjectIdentifier>, quiet: Set<ObjectIdentifier>, fetch: StoreFetch) {
        var leaving = removed
        for o in candidates { leaving.insert(ObjectIdentifier(o)) }
        // Where the candidates were, and which rows stay as they are.
        var wasAt: [ObjectIdentifier: Int] = [:]
        var stays = [Bool](repeating: true, count: rows.count)
        for (i, row) in rows.enumerated() {
            let key = ObjectIdentifier(row.object)
            guard leaving.contains(key) else { continue }
            stays[i] = false
            wasAt[key] = i
        }
        var additions: [Row] = []
        for o in candidates where matches(o, fetch) {
            additions.append(Row(object: o, section: sectionName?(o) ?? "", sortValues: order.values(of: o)))
        }
        let order = self.order
        // Ties go as a fetch breaks them: saved objects by primary key, inserted ones last.
        func precedes(_ a: Row, _ b: Row) -> Bool {
            let c = order.compare(a.sortValues, b.sortValues)
            return c != 0 ? c < 0 : ManagedObjectContext.tieOrder(a.object.objectID, b.object.objectID)
        }
        if additions.count > 1 {
            let sorted = additions.indices.sorted { precedes(additions[$0], additions[$1]) }
            additions = sorted.map { additions[$0] }
        }
        // One pass over the rows that stay, each addition placed before the first row it precedes.
        var merged: [Row] = []
        var origin: [Int] = []
        var changed: [Bool] = []
        var isAddition: [Bool] = []
        merged.reserveCapacity(rows.count + additions.count)
        origin.reserveCapacity(rows.count + additions.count)
        changed.reserveCapacity(rows.count + additions.count)
        var next = 0
        func add(_ a: Row) {
            let key = ObjectIdentifier(a.object)
            merged.append(a)
            origin.append(wasAt[key] ?? -1)
            changed.append(!quiet.contains(key))
            isAddition.append(true)
        }
        for (i, row) in rows.enumerated() where stays[i] {
            while next < additions.count && precedes(additions[next], row) {
                add(additions[next])
                next += 1
            }
            merged.append(row)
            origin.append(i)
            changed.append(false)
            isAddition.append(false)
        }
        while next < additions.count {
            add(additions[next])
            next += 1
        }
        if let limit = fetch.limit {
            // Objects beyond the limit were not read: an addition that sorts at or after the
            // last row the results had (as it sorted then) may come after some of them.
            if rows.count >= limit, let boundary = rows.last?.sortValues {
                for i in 0..<min(merged.count, limit) where isAddition[i] && order.compare(merged[i].sortValues, boundary) >= 0 {
                    refetch(changed: Set(candidates.map(ObjectIdentifier.init)).subtracting(quiet), byID: false)
                    return
                }
            }
            if merged.count > limit {
                merged.removeLast(merged.count - limit)
                origin.removeLast(origin.count - limit)
                changed.removeLast(changed.count - limit)
            } else if merged.count < limit && rows.count >= limit {
                // Rows beyond the limit may now belong in the results.
                refetch(changed: Set(candidates.map(ObjectIdentifier.init)).subtracting(quiet), byID: false)
                return
            }
        }
        report(new: merged, origin: origin, changed: changed)
    }

    /// Fetches the results again and reports the difference (`byID`: objects are told apart by
    /// ID, after a reset made every object new).
    private func refetch(changed: Set<ObjectIdentifier>, byID: Bool) {
        let context = managedObjectContext
        guard let request = fetchedRequest else { return }
        let objects: [ResultType]
        do throws(CoherenceError) {
            objects = try context.fetch(request)
        } catch {
            context.reportPropagationError(error)
            return
        }
        let order = self.order
        let newRows = objects.map { Row(object: $0, section: sectionName?($0) ?? "", sortValues: order.values(of: $0)) }
        let origin =
            byID
            ? ResultsDiff.origins(old: rows.map(\.object.objectID), new: newRows.map(\.object.objectID))
            : ResultsDiff.origins(old: rows.map { ObjectIdentifier($0.object) }, new: newRows.map { ObjectIdentifier($0.object) })
        report(new: newRows, origin: origin, changed: newRows.map { changed.contains(ObjectIdentifier($0.object)) })
    }

    /// Makes `new` the results and reports the difference to the delegate, the change handlers
    /// and the streams (nothing when nothing changed).
    private func report(new: [Row], origin: [Int], changed: [Bool]) {
        let newLayout = SectionLayout(rowSectionNames: new.lazy.map(\.section))
        let (difference, flat) = ResultsDiff.difference(old: rows, layout, new: new, newLayout, origin: origin, changed: changed)
        guard !difference.isEmpty else {
            // The same results, but perhaps other instances of them (after a reset): the change
            // handlers (the `@Observable` form) take the new ones.
            let sameObjects = rows.count == new.count && zip(rows, new).allSatisfy { $0.object === $1.object }
            rows = new
            layout = newLayout
            if !sameObjects {
                let snapshot = makeSnapshot(difference)
                for handler in changeHandlers { handler(snapshot) }
            }
            return
        }
        let oldRows = rows, oldLayout = layout
        rows = new
        layout = newLayout
        let snapshot = makeSnapshot(difference)
        let publication = publications
        if let delegate {
            delegate.controllerWillChangeContent(self)
            for change in difference.sectionChanges {
                let info: FetchedResultsSection<ResultType>
                if change.type == .delete {
                    info = FetchedResultsSection(
                        name: change.name,
                        objects: oldRows[oldLayout.range(of: change.sectionIndex)].compactMap { $0.object as? ResultType })
                } else {
                    info = FetchedResultsSection(
                        name: change.name, objects: new[newLayout.range(of: change.sectionIndex)].compactMap { $0.object as? ResultType })
                }
                delegate.controller(self, didChange: info, atSectionIndex: change.sectionIndex, for: change.type)
            }
            for (change, f) in zip(difference.objectChanges, flat) {
                let found = f.new.map { new[$0].object } ?? f.old.map { oldRows[$0].object }
                guard let object = found as? ResultType else { continue }
                delegate.controller(self, didChange: object, at: change.indexPath, for: change.type, newIndexPath: change.newIndexPath)
            }
            delegate.controllerDidChangeContent(self)
        }
        // A callback that fetched again (`performFetch()`) published the newer results.
        guard publications == publication else { return }
        publish(snapshot, toDelegate: true)
    }
}
