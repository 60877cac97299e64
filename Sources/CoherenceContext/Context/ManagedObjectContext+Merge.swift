import Foundation

extension ManagedObjectContext {
    /// Merges another context's save into this one: registered objects that were updated are
    /// reloaded with this context's own unsaved edits kept, deleted ones are removed, and
    /// ObjectsDidChange is posted with the saved objects' IDs. Call it on this context's executor.
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: background, queue: nil) { note in
    ///     viewContext.perform { viewContext.mergeChanges(fromContextDidSave: note) }
    /// }
    /// ```
    ///
    /// A notification made from persistent history
    /// (``PersistentHistoryTransaction/objectIDNotification()``) may describe changes written by
    /// another coordinator or process: the coordinator's cached rows of its updated and deleted
    /// objects are dropped first, so that they are read again. So are those of a notification
    /// made by hand (its changes under the ID keys, or Core Data's keys of objects).
    ///
    /// A context pinned to a query generation moves to the current state first
    /// (``setQueryGeneration(from:)``).
    public func mergeChanges(fromContextDidSave notification: Notification) {
        assertOnExecutor()
        if let event = notification.userInfo?[NotificationKey.event] as? ContextEvent {
            if notification.userInfo?[NotificationKey.historyToken] != nil {
                persistentStoreCoordinator.rowCache.remove(Array(event.updated.union(event.deleted)))
            }
            merge(event)
            return
        }
        // A notification made elsewhere: the IDs, or else the objects (Core Data's keys).
        let info = notification.userInfo ?? [:]
        var event = ContextEvent(kind: .didSave, contextName: nil)
        event.inserted = Self.ids(info[NotificationKey.insertedObjectIDs] ?? info[NotificationKey.insertedObjects])
        event.updated = Self.ids(info[NotificationKey.updatedObjectIDs] ?? info[NotificationKey.updatedObjects])
        event.deleted = Self.ids(info[NotificationKey.deletedObjectIDs] ?? info[NotificationKey.deletedObjects])
        // It may describe a save through another coordinator: the cached rows are read again,
        // as `mergeChanges(fromRemoteContextSave:into:)` reads them.
        persistentStoreCoordinator.rowCache.remove(Array(event.updated.union(event.deleted)))
        merge(event)
    }

    /// Merges changes described by object IDs (from a batch request's result, another process or
    /// a history reader) into each context, on each context's executor, as Core Data's static
    /// method: registered objects that were updated are reloaded (keeping each context's own
    /// unsaved edits), deleted ones leave the context, and ObjectsDidChange is posted. The
    /// coordinators' row caches first forget the updated and deleted rows, so that faults read
    /// the new values. Contexts pinned to a query generation move to the current state first.
    ///
    /// ```swift
    /// var request = BatchDeleteRequest(fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.age > 99 }))
    /// request.resultType = .objectIDs
    /// let result = try coordinator.execute(request)
    /// ManagedObjectContext.mergeChanges(fromRemoteContextSave: result.changes, into: [viewContext])
    /// ```
    ///
    /// - Parameter changes: `NotificationKey.insertedObjectIDs` / `.updatedObjectIDs` /
    ///   `.deletedObjectIDs` (or "inserted" / "updated" / "deleted") → `[ObjectID]` or `Set<ObjectID>`.
    /// - Parameter contexts: the contexts to update.
    public static func mergeChanges(fromRemoteContextSave changes: [AnyHashable: Any], into contexts: [ManagedObjectContext]) {
        var event = ContextEvent(kind: .didSave, contextName: nil)
        event.inserted = ids(changes[NotificationKey.insertedObjectIDs] ?? changes[NotificationKey.insertedObjects])
        event.updated = ids(changes[NotificationKey.updatedObjectIDs] ?? changes[NotificationKey.updatedObjects])
        event.deleted = ids(changes[NotificationKey.deletedObjectIDs] ?? changes[NotificationKey.deletedObjects])
        let sendable = event
        // The changes were made outside these contexts' coordinators: their cached rows are stale.
        let stale = Array(event.updated.union(event.deleted))
        for c in contexts {
            c.persistentStoreCoordinator.rowCache.remove(stale)
            c.performAndWait { c.merge(sendable) }
        }
    }

    private static func ids(_ value: Any?) -> Set<ObjectID> {
        if let s = value as? Set<ObjectID> { return s }
        if let a = value as? [ObjectID] { return Set(a) }
        if let objects = value as? Set<ManagedObject> { return Set(objects.compactMap(\._objectID)) }
        if let objects = value as? [ManagedObject] { return Set(objects.compactMap(\._objectID)) }
        return []
    }

    /// Merges a save event (on this context's executor).
    package func merge(_ event: ContextEvent) {
        assertOnExecutor()
        // A pinned context moves to the current generation, so the merged objects reload as
        // they are now.
        advanceQueryGeneration()
        applyPermanentIDs(event.permanentIDs)
        // Updated objects: reload registered ones, keeping local edits.
        let updated = event.updated.compactMap { registered[$0] }.filter { !$0.isInserted && $0._context === self }
        var loaded = updated.filter { !$0._state.flags.contains(.fault) || $0._state.flags.contains(.prefilled) }
        var reloaded: [ObjectID: ObjectSnapshot]?
        if !loaded.isEmpty {
            do throws(CoherenceError) {
                reloaded = try source.sourceSnapshots(for: loaded.map(\.objectID))
            } catch {
                reportPropagationError(error)
                // A store detached since the save: its objects cannot be reloaded, the others can.
                let coordinator = persistentStoreCoordinator
                let attached = loaded.filter {
                    $0.objectID.storeIdentifier.flatMap { coordinator.persistentStore(withIdentifier: $0) } != nil
                }
                if attached.count < loaded.count && !attached.isEmpty {
                    loaded = attached
                    do { reloaded = try source.sourceSnapshots(for: attached.map(\.objectID)) } catch { reportPropagationError(error) }
                }
            }
        }
        if let snapshots = reloaded {
            for o in loaded {
                guard let s = snapshots[o.objectID] else { continue }
                let wasFault = o._state.flags.contains(.fault)
                let local = wasFault ? [:] : changedSlots(o)
                let relations = o._state.relations
                o._install(s, asFault: wasFault)
                for (slot, value) in local { o._state.setValue(value, at: slot) }
                if let relations {
                    for (slot, state) in relations {
                        switch state {
                        case .toOne(let target):
                            // Keep a locally changed to-one; a merely resolved one reloads.
                            if let r = o.entity.properties[slot] as? RelationshipDescription, r.hasForeignKey,
                                target?.objectID != o._committedToOneID(r)
                            {
                                o._setRelationState(state, at: slot)
                            }
                        case .toMany(let m):
                            // Reloads, keeping the unsaved edits (of a loaded one too).
                            if let edits = m.unsavedEdits(registered: lookup) { o._setRelationState(.toMany(edits), at: slot) }
                        }
                    }
                }
            }
        }
        // Loaded to-many relationships may have gained or lost members: let them reload.
        if !event.inserted.isEmpty || !event.deleted.isEmpty || !event.updated.isEmpty {
            for o in registered.values where o._state.relations != nil && !o.isInserted {
                guard let relations = o._state.relations else { continue }
                for (slot, state) in relations {
                    if case .toMany(let m) = state, m.objects != nil, m.pendingAdds.isEmpty, m.pendingRemoves.isEmpty,
                        !o.hasChanges
                    {
                        o._state.setRelation(nil, at: slot)
                    }
                }
            }
        }
        for o in updated { pendingChanges.refreshed[ObjectIdentifier(o)] = o }
        // Objects registered under a permanent ID before their save found no row then: they
        // are faults again, read at their next access.
        for id in event.inserted {
            guard let o = registered[id], o._state.flags.contains(.inaccessible), !o.isDeleted, unloaded[ObjectIdentifier(o)] == nil
            else { continue }
            o._state.markRowBack()
            unfilledFaults[ObjectIdentifier(o.entity.rootEntity), default: []].append(o)
        }
        // Deleted objects leave the context.
        for id in event.deleted {
            guard let o = registered[id] else { continue }
            let key = ObjectIdentifier(o)
            registered[id] = nil
            updatedCandidates.remove(o)
            if deletedSet.remove(key) != nil { deletedList.removeAll { $0 === o } }
            o._state.markDeleted()
            pendingChanges.deleted[key] = o
        }
        if !event.deleted.isEmpty { removeReferences(to: event.deleted) }
        // (Into an empty set, the event's IDs are taken as they are rather than rehashed.)
        if pendingChanges.mergedInserted.isEmpty {
            pendingChanges.mergedInserted = event.inserted
        } else {
            pendingChanges.mergedInserted.formUnion(event.inserted)
        }
        if pendingChanges.mergedUpdated.isEmpty {
            pendingChanges.mergedUpdated = event.updated
        } else {
            pendingChanges.mergedUpdated.formUnion(event.updated)
        }
        if pendingChanges.mergedDeleted.isEmpty {
            pendingChanges.mergedDeleted = event.deleted
        } else {
            pendingChanges.mergedDeleted.formUnion(event.deleted)
        }
        processPendingChanges()
        // Children that merge automatically see the merged state next.
        for child in childContexts where child.automaticallyMergesChangesFromParent {
            child.perform { child.merge(event) }
        }
    }

    /// Removes in-memory references to deleted objects.
    private func removeReferences(to ids: Set<ObjectID>) {
        for o in allRegisteredObjects {
            guard let relations = o._state.relations else { continue }
            for (slot, state) in relations {
                switch state {
                case .toOne(let target):
                    if let t = target, ids.contains(t.objectID) { o._state.setRelation(.toOne(nil), at: slot) }
                case .toMany(let m):
                    if let objects = m.objects, objects.contains(where: { ids.contains($0.objectID) }) {
                        m.objects = objects.filter { !ids.contains($0.objectID) }
                        m.committed = m.committed?.filter { !ids.contains($0) }
                    }
                }
            }
        }
    }

    /// Replaces temporary IDs by permanent ones (after the change reached the store), here and
    /// in child contexts.
    package func applyPermanentIDs(_ map: [ObjectID: ObjectID]) {
        guard !map.isEmpty else { return }
        pendingPermanentIDs.withLock { pending in
            if !pending.isEmpty { for temp in map.keys { pending[temp] = nil } }
        }
        var changed = false
        for (temp, permanent) in map {
            if let o = registered[temp] {
                rekey(o, to: permanent)
                changed = true
            }
        }
        if changed {
            for o in registered.values { o._state.remapCommittedIDs(map) }
        }
        for child in childContexts {
            child.perform { child.applyPermanentIDs(map) }
        }
    }

    /// Notes permanent IDs for this context and its descendants at once, on any thread (see
    /// ``pendingPermanentIDs``); each applies them with its queued ``applyPermanentIDs(_:)``, or
    /// at its next save if that comes first.
    func notePermanentIDs(_ map: [ObjectID: ObjectID]) {
        pendingPermanentIDs.withLock { $0.merge(map) { _, new in new } }
        for child in childContexts { child.notePermanentIDs(map) }
    }

    /// Applies the permanent IDs noted and not yet applied (on this context's executor).
    func applyPendingPermanentIDs() {
        let map = pendingPermanentIDs.withLock { pending in
            defer { pending = [:] }
            return pending
        }
        applyPermanentIDs(map)
    }

    /// The live child contexts.
    var childContexts: [ManagedObjectContext] {
        children.withLock { list in
            list.removeAll { $0.context == nil }
            return list.compactMap(\.context)
        }
    }

    /// After a save: merge into contexts that merge automatically, and hand permanent IDs down.
    func propagateSave(_ event: ContextEvent) {
        if let parent {
            for c in parent.childContexts where c !== self && c.automaticallyMergesChangesFromParent {
                c.perform { c.merge(event) }
            }
        } else {
            persistentStoreCoordinator.publishSave(event, from: self)
        }
        for child in childContexts {
            if !event.permanentIDs.isEmpty { child.notePermanentIDs(event.permanentIDs) }
            if child.automaticallyMergesChangesFromParent {
                child.perform { child.merge(event) }
            } else if !event.permanentIDs.isEmpty {
                let map = event.permanentIDs
                child.perform { child.applyPermanentIDs(map) }
            }
        }
    }
}

extension ManagedObjectContext: CoordinatorObserver {
    /// Another root context of the coordinator saved: merge its changes when this context
    /// merges automatically (root contexts subscribe when they start to).
    package func coordinatorDidSave(_ event: ContextEvent, from source: AnyObject) {
        guard parent == nil, automaticallyMergesChangesFromParent else { return }
        perform { self.merge(event) }
    }
}
