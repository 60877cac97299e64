import Dispatch
import Foundation

extension ManagedObjectContext {
    /// Saves the context's changes: to the stores (one transaction per store), or into the
    /// parent context for a child.
    ///
    /// In order: pending changes are processed (ObjectsDidChange), every changed object is
    /// validated (all failures are reported together in one `.validation` error), `willSave()`
    /// is called and WillSave posted, conflicts are detected and resolved with the
    /// ``mergePolicy``, the changes are written atomically, `didSave()` is called and DidSave
    /// posted. A save that fails leaves the stores as they were and the context's changes in
    /// place, so you can fix them and save again.
    ///
    /// Objects edited while their data could not be loaded (see
    /// ``ManagedObject/fulfillFault()``) are loaded first, so their edits apply over their rows,
    /// and delete rules or relationship replacements that could not read their destinations
    /// are completed; when one still cannot be read the save throws that error, naming the
    /// object, and writes nothing.
    ///
    /// A successful save (with or without changes) moves a context pinned to a query generation
    /// to the current state, pinned at its next read (``setQueryGeneration(from:)``).
    public func save() throws(CoherenceError) {
        assertOnExecutor()
        guard !isSaving else {
            throw CoherenceError(
                .invalidRequest,
                "save() was called while the context '\(name ?? "unnamed")' is already saving (from willSave or an observer?).")
        }
        isSaving = true
        defer { isSaving = false }
        // Objects an ancestor's save made permanent go by their permanent IDs, even when that
        // save happened inside this block (the queued update has not run yet).
        if parent != nil { applyPendingPermanentIDs() }
        // Delete rules and replacements that could not read their relationships complete, and
        // changed objects whose data is needed and not in memory load (or the save throws);
        // what that changes is announced with the rest just below.
        if !pendingDeleteRules.isEmpty { try completePendingDeleteRules() }
        if !pendingReplaces.isEmpty { try completePendingReplaces() }
        try loadChangedFaults()
        processPendingChanges()
        // The inserted objects ObjectsDidChange just reported: when they are all the inserted
        // objects, their sets serve WillSave and DidSave too (no second hashing of every object).
        let posted = postedInserted
        postedInserted = nil
        let postedUpdates = postedUpdated
        postedUpdated = nil
        guard hasChanges else {
            advanceQueryGeneration()
            return
        }
        if let refusal = hooks.saveRefusal?() { throw refusal }
        let start = DispatchTime.now().uptimeNanoseconds
        defer { statistics.saveTime += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }

        // Which existing objects really changed, worked out once for the whole save (in the
        // same pass as their validation).
        let updated = try validateChanges(candidates: updatedCandidates.values)
        if parent == nil && managedObjectModel.hasOrderedJoinRelationships { try refuseLostJoinOrder(updated: updated) }
        insertedList.forEachBorrowed { $0.willSave() }
        updated.forEachBorrowed { $0.willSave() }
        deletedList.forEachBorrowed { $0.willSave() }
        var willSave = ContextEvent(kind: .willSave, contextName: name)
        if let posted, posted.ids.count == insertedList.count {
            willSave.inserted = posted.ids
        } else {
            willSave.inserted = ObjectID.set(of: insertedList)
        }
        // The sets ObjectsDidChange built serve the save when they list exactly its updated
        // objects. Both lists are in the order the objects were first changed, so the usual
        // case is one identity comparison per object.
        let sameUpdates = postedUpdates.map { ManagedObject.identical($0.list, updated) } ?? false
        willSave.updated = sameUpdates ? postedUpdates?.ids ?? [] : ObjectID.set(of: updated)
        willSave.deleted = ObjectID.set(of: deletedList)
        NotificationCenter.default.post(name: Self.willSaveNotification, object: self, userInfo: willSave.idUserInfo)
        broadcaster.yield(willSave)
        // Changes made by willSave are part of this save; when there were none, the sets built
        // so far still describe the save.
        let unchangedByWillSave = pendingChanges.isEmpty
        discardPendingChanges()

        var saved: SavedObjects
        if let parent {
            if hooks.checksStoresOnSave { try checkStoresAttached(updated: updated) }
            saved = try pushToParent(parent)
        } else {
            saved = try saveToStores(validated: updated)
        }
        if unchangedByWillSave && !saved.hadConflicts {
            if let posted, posted.objects.count == saved.inserted.count { saved.insertedSet = posted.objects }
            if willSave.updated.count == saved.updated.count {
                saved.updatedIDs = willSave.updated
                if sameUpdates { saved.updatedSet = postedUpdates?.objects }
            }
            if willSave.deleted.count == saved.deleted.count { saved.deletedIDs = willSave.deleted }
        }
        finishSave(saved)
    }

    /// What a successful save wrote.
    struct SavedObjects {
        var inserted: [ManagedObject] = []
        var updated: [ManagedObject] = []
        var deleted: [ManagedObject] = []
        var permanentIDs: [ObjectID: ObjectID] = [:]
        /// The merge policy resolved conflicts before the save succeeded.
        var hadConflicts = false
        /// `Set(inserted)` / the IDs of `updated`, when already built for this save.
        var insertedSet: Set<ManagedObject>?
        var updatedSet: Set<ManagedObject>?
        var updatedIDs: Set<ObjectID>?
        var deletedIDs: Set<ObjectID>?
    }

    /// Throws when a change has no attached store to be written to: an inserted object whose
    /// entity no attached store holds, or a changed object whose store was detached.
    func checkStoresAttached(updated: [ManagedObject]) throws(CoherenceError) {
        let coordinator = persistentStoreCoordinator
        // Each entity and each store is looked up once (a lookup takes the coordinator's lock).
        var checkedEntities: Set<ObjectIdentifier> = []
        var attached: Set<UUID> = []
        func check(_ o: ManagedObject) throws(CoherenceError) {
            if let sid = o.objectID.storeIdentifier ?? assignedStores[o.objectID] {
                guard !attached.contains(sid) else { return }
                guard coordinator.persistentStore(withIdentifier: sid) != nil else {
                    throw CoherenceError(
                        .storeNotAttached, "\(o.objectID) lives in a store that is no longer attached; its changes cannot be saved.",
                        entity: o.entity.name, objectID: o.objectID)
                }
                attached.insert(sid)
            } else if checkedEntities.insert(ObjectIdentifier(o.entity)).inserted {
                _ = try coordinator.store(forNew: o.objectID, assignedStores: [:])
            }
        }
        for o in insertedList { try check(o) }
        for o in updated { try check(o) }
        for o in deletedList { try check(o) }
    }

    // MARK: Validation

    /// Validates every changed object; throws one error listing every failure. Returns the
    /// candidates that are really updated (each is validated as it is found).
    func validateChanges(candidates: [ManagedObject]) throws(CoherenceError) -> [ManagedObject] {
        var failures: [CoherenceError] = []
        var rules = ValidationRules()
        insertedList.forEachBorrowed { o in
            validateProperties(o, rules: &rules, into: &failures)
            do { try o.validateForInsert() } catch { failures.append(Self.wrap(error, o)) }
        }
        var updated: [ManagedObject] = []
        updated.reserveCapacity(candidates.count)
        // The entity's stored-attribute slots, taken once per run of objects of one entity.
        var entity: EntityDescription?
        var isStored: [Bool] = []
        candidates.forEachBorrowed { o in
            if o.entity !== entity {
                entity = o.entity
                isStored = o.entity.isStoredAttributeSlot
            }
            guard o._isUpdated(isStoredAttribute: isStored) else { return }
            updated.append(o)
            validateProperties(o, rules: &rules, into: &failures)
            do { try o.validateForUpdate() } catch { failures.append(Self.wrap(error, o)) }
        }
        for o in deletedList {
            for r in o.entity.relationships where r.deleteRule == .deny && !r.isTransient {
                // Unreadable destinations are not counted as none (a row that is gone has none).
                if !o._state.flags.contains(.inaccessible) {
                    do throws(CoherenceError) {
                        try o.fulfillFault(forRelationshipNamed: r.name)
                    } catch {
                        failures.append(Self.naming(o, in: error))
                        continue
                    }
                }
                let remaining = o._relatedObjects(at: r.slot).filter { !$0.isDeleted }
                if !remaining.isEmpty {
                    failures.append(
                        CoherenceError(
                            .deleteDenied,
                            "\(o.entity.name) \(o.objectID) cannot be deleted: relationship '\(r.name)' (delete rule deny) still has \(remaining.count) object(s).",
                            entity: o.entity.name, property: r.name, objectID: o.objectID))
                }
            }
            do { try o.validateForDelete() } catch { failures.append(Self.wrap(error, o)) }
        }
        guard !failures.isEmpty else { return updated }
        let summary = failures.prefix(3).map(\.message).joined(separator: "; ")
        var error = CoherenceError(
            .validation, "The save failed validation with \(failures.count) error(s): \(summary)\(failures.count > 3 ? "; …" : "")")
        error.underlyingErrors = failures
        throw error
    }

    /// Refuses a save to the stores that would lose the order of an ordered many-to-many
    /// relationship (kept in a join table, which keeps no order: its destinations are read in
    /// key order, and the objects inserted by the save get keys above every existing one, in
    /// the order they were inserted). A relationship changed while it was not read is not
    /// checked (its order is not known). Entities without such relationships cost nothing.
    func refuseLostJoinOrder(updated: [ManagedObject]) throws(CoherenceError) {
        var failures: [CoherenceError] = []
        var insertedRank: [ObjectIdentifier: Int]?
        func check(_ o: ManagedObject, inserted: Bool) {
            let relationships = o.entity.orderedJoinRelationships
            guard !relationships.isEmpty, o._state.relations != nil else { return }
            for r in relationships {
                guard case .toMany(let m)? = o._state.relation(at: r.slot), let objects = m.objects else { continue }
                let current = objects.filter { !$0.isDeleted }
                if !inserted, current.lazy.map(\.objectID).elementsEqual(m.committed ?? []) { continue }
                if insertedRank == nil {
                    var ranks: [ObjectIdentifier: Int] = [:]
                    for (n, i) in insertedList.enumerated() { ranks[ObjectIdentifier(i)] = n }
                    insertedRank = ranks
                }
                func rank(_ d: ManagedObject) -> (Int, Int64) {
                    if let n = insertedRank?[ObjectIdentifier(d)] { return (1, Int64(n)) }
                    return (0, d.objectID.primaryKey)
                }
                let kept = zip(current, current.dropFirst()).allSatisfy { rank($0) < rank($1) }
                if !kept {
                    failures.append(
                        CoherenceError(
                            .validation,
                            "\(o.entity.name).\(r.name) is an ordered many-to-many relationship, whose order the stores do not keep (a join table keeps no order; its objects are read in key order, new objects last in the order they were inserted): the order given would be lost.",
                            entity: o.entity.name, property: r.name, objectID: o.objectID))
                }
            }
        }
        insertedList.forEachBorrowed { check($0, inserted: true) }
        updated.forEachBorrowed { check($0, inserted: false) }
        guard !failures.isEmpty else { return }
        let summary = failures.prefix(3).map(\.message).joined(separator: "; ")
        var error = CoherenceError(
            .validation, "The save failed validation with \(failures.count) error(s): \(summary)\(failures.count > 3 ? "; …" : "")",
            entity: failures[0].entityName, property: failures[0].propertyName, objectID: failures[0].objectID)
        error.underlyingErrors = failures
        throw error
    }

    private static func wrap(_ error: any Error, _ o: ManagedObject) -> CoherenceError {
        if let e = error as? CoherenceError { return e }
        return CoherenceError(.validation, "\(o.entity.name) \(o.objectID): \(error)", entity: o.entity.name, objectID: o.objectID)
    }

    /// Checks required values, ranges, lengths, patterns and relationship counts; appends a
    /// failure per broken rule to `failures` (no array per object). `rules` holds the lists of
    /// the entity of the previous object (taken again when the entity changes).
    func validateProperties(_ o: ManagedObject, rules: inout ValidationRules, into failures: inout [CoherenceError]) {
        func fail(_ p: PropertyDescription, _ message: String) {
            failures.append(
                CoherenceError(
                    .validation, "\(o.entity.name).\(p.name) \(message)", entity: o.entity.name,
                    property: p.name, objectID: o.objectID))
        }
        o._willAccess()
        rules.take(o.entity)
        // Required attributes need only a nil check; the full rules run only for attributes
        // that have some (both lists are worked out when the model loads). The values are read
        // in place, and the lists by index (a loop over a list would retain it per object).
        for i in rules.required.indices where o._state.values[rules.required[i]].isNull {
            if let a = o.entity.properties[rules.required[i]] as? AttributeDescription { fail(a, "is required") }
        }
        for i in rules.ruled.indices {
            let a = rules.ruled[i]
            let v = o._state.values[a.slot]
            if v.isNull { continue }
            for message in a.ruleViolations(v) { fail(a, message) }
        }
        guard !rules.constrained.isEmpty else { return }
        for r in rules.constrained {
            if !o.isInserted {
                // Destinations that cannot be read are not counted as none: the error is the failure.
                do throws(CoherenceError) {
                    try o.fulfillFault(forRelationshipNamed: r.name)
                } catch {
                    failures.append(Self.naming(o, in: error))
                    continue
                }
            }
            if r.isToMany {
                let n = o._relatedObjects(at: r.slot).filter { !$0.isDeleted }.count
                if r.minCount > 0 && n < r.minCount { fail(r, "has \(n) object(s), fewer than the minimum \(r.minCount)") }
                if r.maxCount > 0 && n > r.maxCount { fail(r, "has \(n) object(s), more than the maximum \(r.maxCount)") }
            } else if !r.isOptional {
                if o._toOne(r) == nil { fail(r, "is required") }
            }
        }
    }

    // MARK: Saving to stores

    /// Builds the change set for the current changes, with the object of each update (aligned
    /// with `changes.updates`; inserts are aligned with `insertedList`).
    func buildChangeSet() -> (changes: StoreChangeSet, updatedObjects: [Unmanaged<ManagedObject>]) {
        var changes = StoreChangeSet()
        changes.assignedStores = assignedStores
        // (Recorded in the history of stores that track it.)
        changes.transactionAuthor = transactionAuthor
        changes.contextName = name
        // Unretained: the updated candidates keep these objects alive until the save has applied
        // its result (no code outside the save runs in between).
        var updatedObjects: [Unmanaged<ManagedObject>] = []
        changes.inserts.reserveCapacity(insertedList.count)
        insertedList.forEachBorrowed { o in
            // Only set to-one relationships are listed: foreign keys are NULL otherwise.
            var references: [RowReference] = []
            for r in o.entity.foreignKeyRelationships {
                if let target = o._currentToOneID(r) { references.append(RowReference(slot: r.slot, target: target)) }
            }
            changes.inserts.append(RowInsert(objectID: o.objectID, values: o._state.values, references: references))
            if o._state.relations != nil {
                appendJoinChanges(o, into: &changes)
                let ordered = o.entity.orderedKeyRelationships
                if !ordered.isEmpty { appendOrderChanges(o, ordered, inserted: true, into: &changes) }
            }
        }
        changes.updates.reserveCapacity(updatedCandidates.count)
        updatedObjects.reserveCapacity(updatedCandidates.count)
        // Objects changed the same way share one slots array (no allocation per object). Each
        // object's slots are appended to `scratch` from `start` (emptied only when it grows: an
        // empty-keeping-capacity per object costs more than the rest of the slot work).
        var scratch: [Int] = []
        var lastSlots: [Int] = []
        // The entity's lists, taken once per run of objects of one entity (not per object).
        var entity: EntityDescription?
        var isStored: [Bool] = []
        var foreignKeys: [RelationshipDescription] = []
        var ordered: [RelationshipDescription] = []
        updatedCandidates.values.forEachBorrowed { o in
            guard !o.isInserted && !o.isDeleted else { return }
            if o.entity !== entity {
                entity = o.entity
                isStored = o.entity.isStoredAttributeSlot
                foreignKeys = o.entity.foreignKeyRelationships
                ordered = o.entity.orderedKeyRelationships
            }
            if scratch.count > 4096 { scratch.removeAll(keepingCapacity: true) }
            let start = scratch.count
            var references: [RowReference] = []
            // The snapshot lists the slots changed since the load or last save.
            o._state.appendChangedSlots(isStoredAttribute: isStored, to: &scratch)
            // Objects with a snapshot (loaded or saved before) compare their to-one destinations
            // (without relationship state, the current ones are the committed ones).
            if o._state.hasSnapshot && !foreignKeys.isEmpty && o._state.relations != nil {
                for r in foreignKeys {
                    let current = o._currentToOneID(r)
                    let old = o._committedToOneID(r)
                    if current != old {
                        scratch.append(r.slot)
                        references.append(RowReference(slot: r.slot, target: current))
                    }
                }
                if !references.isEmpty { scratch[start...].sort() }  // slots in property order
            }
            if o._state.relations != nil {
                appendJoinChanges(o, into: &changes)
                if !ordered.isEmpty { appendOrderChanges(o, ordered, inserted: false, into: &changes) }
            }
            var expectedVersion: Int64? = o._state.version
            if scratch.count == start {
                // Only its relationships changed (to-many, or a to-one kept by the other side):
                // no column to write, but the row is still checked and its version moved, as
                // Core Data does, so a row deleted or changed elsewhere is a conflict instead of
                // a reference written to a row that is gone. A fault (never loaded) has no
                // version to expect: its row need only exist.
                guard o._state.relations != nil, o._hasRelationshipChanges else { return }
                if !o._state.hasSnapshot { expectedVersion = nil }
            }
            if !scratch[start...].elementsEqual(lastSlots) { lastSlots = Array(scratch[start...]) }
            changes.appendUpdate(
                RowUpdate(
                    objectID: o.objectID, values: o._state.values, changedSlots: lastSlots, references: references,
                    expectedVersion: expectedVersion, cachedValues: nil, originals: o._state.originals))
            updatedObjects.append(.passUnretained(o))
        }
        deletedList.forEachBorrowed { o in
            guard !o.objectID.isTemporaryID else { return }
            changes.deletes.append(RowDelete(objectID: o.objectID, expectedVersion: o._state.version, values: o._state.values))
        }
        return (changes, updatedObjects)
    }

    /// Join-table changes of an object's to-many relationships (from the owning side only).
    private func appendJoinChanges(_ o: ManagedObject, into changes: inout StoreChangeSet) {
        guard let relations = o._state.relations else { return }
        for (slot, state) in relations {
            guard case .toMany(let m) = state, let r = o.entity.properties[slot] as? RelationshipDescription,
                case .joinTable(_, let sourceIsFirst) = r.storage, sourceIsFirst
            else { continue }
            if let objects = m.objects {
                let current = Set(objects.filter { !$0.isDeleted }.map(\.objectID))
                let committed = Set(m.committed ?? [])
                for d in current.subtracting(committed) {
                    changes.joinInserts.append(JoinChange(relationship: r, source: o.objectID, destination: d))
                }
                for d in committed.subtracting(current) {
                    changes.joinDeletes.append(JoinChange(relationship: r, source: o.objectID, destination: d))
                }
            } else {
                for d in m.pendingAdds where !d.isDeleted {
                    changes.joinInserts.append(JoinChange(relationship: r, source: o.objectID, destination: d.objectID))
                }
                for d in registeredObjects(m.pendingRemoves) {
                    changes.joinDeletes.append(JoinChange(relationship: r, source: o.objectID, destination: d.objectID))
                }
            }
        }
    }

    /// The places to write for an object's ordered relationships kept in their destinations'
    /// keys (`relationships`, the entity's ``EntityDescription/orderedKeyRelationships``): the
    /// whole list when the order changed (or the object is new); only the destinations added at
    /// the end when the others kept their order (or the relationship was not read: the
    /// destinations added go after the stored ones); nothing when destinations were only
    /// removed (the others keep their places, so their order).
    private func appendOrderChanges(
        _ o: ManagedObject, _ relationships: [RelationshipDescription], inserted: Bool, into changes: inout StoreChangeSet
    ) {
        for r in relationships {
            guard case .toMany(let m)? = o._state.relation(at: r.slot) else { continue }
            guard let objects = m.objects else {
                let added = m.pendingAdds.filter { !$0.isDeleted }.map(\.objectID)
                if !added.isEmpty {
                    changes.orders.append(OrderChange(relationship: r, source: o.objectID, destinations: added, appends: true))
                }
                continue
            }
            let current = objects.filter { !$0.isDeleted }.map(\.objectID)
            let committed = inserted ? [] : m.committed ?? []
            if current == committed || current.isEmpty { continue }
            let members = Set(current)
            let kept = committed.filter { members.contains($0) }
            if !inserted, current.starts(with: kept) {
                let added = Array(current[kept.count...])
                if !added.isEmpty {
                    changes.orders.append(OrderChange(relationship: r, source: o.objectID, destinations: added, appends: true))
                }
            } else {
                changes.orders.append(OrderChange(relationship: r, source: o.objectID, destinations: current, appends: false))
            }
        }
    }

    private func registeredObjects(_ keys: Set<ObjectIdentifier>) -> [ManagedObject] {
        guard !keys.isEmpty else { return [] }
        return allRegisteredObjects.filter { keys.contains(ObjectIdentifier($0)) }
    }

    /// Writes to the stores, resolving conflicts with the merge policy and trying again.
    /// `validated` lists the updated objects validation found (see ``applyStoreResult``).
    ///
    /// A save tries five times, and goes on (up to ``conflictRoundLimit`` tries) while each
    /// try meets other conflicts than the one before: other writers are saving the same rows
    /// (each of their saves moves a version), so every try builds on newer rows, and the
    /// save ends when they stop. The same conflicts twice after five tries mean that
    /// resolving them does not help: the save throws them.
    func saveToStores(validated: [ManagedObject]) throws(CoherenceError) -> SavedObjects {
        var round = 0
        var previous: Set<ConflictMark> = []
        while true {
            let (changes, updatedObjects) = buildChangeSet()
            do throws(CoherenceError) {
                let result = try persistentStoreCoordinator.save(changes)
                var saved = applyStoreResult(result, changes: changes, updatedObjects: updatedObjects, validated: validated)
                saved.hadConflicts = round > 0
                return saved
            } catch {
                guard error.code == .conflict, !error.conflicts.isEmpty else { throw error }
                let marks = Set(error.conflicts.map(ConflictMark.init))
                let moved = marks != previous
                guard round < 4 || (moved && round < Self.conflictRoundLimit - 1) else { throw error }
                previous = marks
                round += 1
                do {
                    try mergePolicy.resolve(conflicts: error.conflicts, in: self)
                } catch let e as CoherenceError {
                    throw e
                } catch {
                    var e = CoherenceError(.conflict, "The merge policy failed: \(error)")
                    e.underlyingErrors = [ErrorBox(error)]
                    throw e
                }
            }
        }
    }

    /// The most tries of one save whose conflicts keep moving (see ``saveToStores(validated:)``).
    static let conflictRoundLimit = 100

    /// What tells one try's conflict from another's: the row, the kind, the version the
    /// store holds and the rows a uniqueness conflict names.
    struct ConflictMark: Hashable {
        let id: ObjectID
        let uniqueness: Bool
        let version: Int64
        let others: [ObjectID]
        init(_ c: SaveConflict) {
            id = c.objectID
            uniqueness = c.kind == .uniqueness
            version = c.newVersion
            others = c.conflictingObjectIDs
        }
    }

    /// Updates objects after a successful store save. When the saved updated objects are
    /// `validated` (the usual case: the same objects in the same order), that list is the
    /// saved one (no second list of them, no retain of each).
    private func applyStoreResult(
        _ result: StoreSaveResult, changes: StoreChangeSet, updatedObjects: [Unmanaged<ManagedObject>], validated: [ManagedObject]
    ) -> SavedObjects {
        var saved = SavedObjects()
        saved.inserted = insertedList
        saved.deleted = deletedList
        // Results are aligned with the change set: inserts with `insertedList`, updates with
        // `updatedObjects`.
        saved.permanentIDs.reserveCapacity(insertedList.count)
        registered.reserveCapacity(registered.count + insertedList.count)
        for (o, id) in zip(insertedList, result.insertedIDs) {
            guard let old = o._objectID, old.isTemporaryID, !id.isTemporaryID else { continue }
            saved.permanentIDs[old] = id
            rekey(o, to: id)
        }
        // One pass over the candidates (each object is visited once, while it is in the cache):
        // `updatedObjects` lists, in the same order, the candidates whose rows were written,
        // aligned with their new versions.
        let versions = result.updatedVersions
        var written = 0
        // The saved updated objects are counted while they match `validated`, and listed apart
        // only from the first that does not.
        var matching = 0
        var listed = false
        var list: [ManagedObject] = []
        // The entity's foreign keys, taken once per run of objects of one entity.
        var entity: EntityDescription?
        var foreignKeys: [RelationshipDescription] = []
        if !updatedCandidates.isEmpty {
            updatedCandidates.values.forEachBorrowed { o in
                guard !o.isInserted && !o.isDeleted else { return }
                if o.entity !== entity {
                    entity = o.entity
                    foreignKeys = o.entity.foreignKeyRelationships
                }
                var wasWritten = false
                if written < updatedObjects.count && updatedObjects[written].toOpaque() == Unmanaged.passUnretained(o).toOpaque() {
                    if written < versions.count { o._state.noteWritten(version: versions[written]) }
                    written += 1
                    wasWritten = true
                }
                if wasWritten || o._hasRelationshipChanges {
                    if listed {
                        list.append(o)
                    } else if matching < validated.count && validated[matching] === o {
                        matching += 1
                    } else {
                        list = Array(validated[..<matching])
                        list.append(o)
                        listed = true
                    }
                }
                commit(o, foreignKeys: foreignKeys)
            }
        }
        if listed {
            saved.updated = list
        } else if matching > 0 {
            saved.updated = matching == validated.count ? validated : Array(validated[..<matching])
        }
        // (Defensive, against a misaligned list: an object written but missed above still gets
        // its version. The objects are alive: nothing has run since the change set was built.)
        if written < updatedObjects.count {
            for (o, v) in zip(updatedObjects[written...], versions[min(written, versions.count)...]) {
                o.takeUnretainedValue()._state.noteWritten(version: v)
            }
        }
        insertedList.forEachBorrowed { o in
            guard !o.isDeleted else { return }
            o._state.endInserted(version: 1)
            commit(o)
        }
        deletedList.forEachBorrowed { o in
            registered[o.objectID] = nil
            o._context = nil
            o._leaveGroup()
        }
        statistics.inserts += changes.inserts.count
        statistics.updates += changes.updates.count
        statistics.deletes += changes.deletes.count
        return saved
    }

    /// Makes an object's current state its committed state.
    func commit(_ o: ManagedObject) {
        commit(o, foreignKeys: o.entity.foreignKeyRelationships)
    }

    /// Makes a saved object's current state its committed state, with its entity's foreign-key
    /// relationships at hand (taken once per run of objects of one entity).
    private func commit(_ o: ManagedObject, foreignKeys: [RelationshipDescription]) {
        o._state.commit(foreignKeys: foreignKeys, objectID: o._objectID)
    }

    /// Clears change tracking after a save and posts DidSave.
    func finishSave(_ saved: SavedObjects) {
        insertedList = []
        insertedIndex = nil
        assignedStores = [:]
        updatedCandidates = [:]
        deletedList = []
        deletedSet = []
        discardPendingChanges()
        saved.inserted.forEachBorrowed { $0.didSave() }
        saved.updated.forEachBorrowed { $0.didSave() }
        saved.deleted.forEachBorrowed { $0.didSave() }
        saved.deleted.forEachBorrowed { $0._state.clearFlags() }

        var event = ContextEvent(kind: .didSave, contextName: name)
        event.transactionAuthor = transactionAuthor
        event.inserted = ObjectID.set(of: saved.inserted)
        event.updated = saved.updatedIDs ?? ObjectID.set(of: saved.updated)
        event.deleted = saved.deletedIDs ?? ObjectID.set(of: saved.deleted)
        event.permanentIDs = saved.permanentIDs
        let boxed: Any = event  // one box for both notifications
        let idInfo = event.userInfo(objects: nil, boxed: boxed)
        let info = event.userInfo(
            objects: ObjectSets(
                inserted: saved.insertedSet ?? Set(saved.inserted), updated: saved.updatedSet ?? Set(saved.updated),
                deleted: Set(saved.deleted)), boxed: boxed)
        NotificationCenter.default.post(name: Self.didSaveNotification, object: self, userInfo: info)
        NotificationCenter.default.post(name: Self.didSaveObjectIDsNotification, object: self, userInfo: idInfo)
        broadcaster.yield(event)
        advanceQueryGeneration()
        propagateSave(event)
        hooks.didSave?(event)
    }

    // MARK: Saving into a parent

    /// One object's changes, as handed to the parent (Sendable: IDs and values only).
    struct PushedObject: Sendable {
        enum Kind: Sendable { case insert, update, delete }
        var kind: Kind
        var id: ObjectID
        var values: [StoredValue]
        var changedSlots: [Int]
        var toOne: [(slot: Int, target: ObjectID?)]
        var toMany: [PushedToMany]
    }

    /// A to-many relationship as handed to the parent: the whole list of destinations
    /// (`targets`, for an inserted object or an ordered relationship), or the destinations added
    /// and removed since the child read it, applied to the parent's relationship as it is now —
    /// which keeps what the parent (or another child) changed there since.
    struct PushedToMany: Sendable {
        var slot: Int
        var targets: [ObjectID]?
        var added: [ObjectID] = []
        var removed: [ObjectID] = []
    }

    /// Pushes the changes into the parent's memory (on the parent's executor).
    func pushToParent(_ parent: ManagedObjectContext) throws(CoherenceError) -> SavedObjects {
        var pushed: [PushedObject] = []
        var saved = SavedObjects()
        // An inserted object's relationships go whole; an updated object's only as far as the
        // child changed them (a destination it read and left as it was, or a to-many member the
        // parent added since the child read the relationship, is not undone in the parent).
        // `keptElsewhere`: a relationship the child changed that is pushed through the
        // destinations (the object is still one the child updated).
        func relationships(_ o: ManagedObject, inserted: Bool) -> (
            toOne: [(slot: Int, target: ObjectID?)], toMany: [PushedToMany], keptElsewhere: Bool
        ) {
            var toOne: [(slot: Int, target: ObjectID?)] = []
            var toMany: [PushedToMany] = []
            var keptElsewhere = false
            guard let relations = o._state.relations else { return ([], [], false) }
            for (slot, state) in relations {
                guard let r = o.entity.properties[slot] as? RelationshipDescription else { continue }
                switch state {
                case .toOne(let t):
                    if inserted {
                        toOne.append((slot, t?.objectID))
                    } else if r.hasForeignKey, t?.objectID != o._committedToOneID(r) {
                        toOne.append((slot, t?.objectID))
                    }
                // (A relationship kept in the destinations' keys — a one-to-one kept on the other
                // side, a to-many with a to-one inverse — changes the destinations' keys: they are
                // pushed with it, and setting them in the parent sets this side.)
                case .toMany(let m):
                    guard m.objects != nil || !m.pendingAdds.isEmpty || !m.pendingRemoves.isEmpty else { continue }
                    if !inserted, r.isOrdered {
                        // (Whole, when the child changed its members or their order.)
                        let current = o._toMany(r).filter { !$0.isDeleted }.map(\.objectID)
                        if current != m.committed { toMany.append(PushedToMany(slot: slot, targets: current)) }
                        continue
                    }
                    if !inserted, let inverse = r.inverseRelationship, !inverse.isToMany {
                        if !m.pendingAdds.isEmpty || !m.pendingRemoves.isEmpty {
                            keptElsewhere = true
                        } else if let objects = m.objects, Set(objects.map(\.objectID)) != Set(m.committed ?? []) {
                            keptElsewhere = true
                        }
                        continue
                    }
                    let current = o._toMany(r).filter { !$0.isDeleted }.map(\.objectID)
                    guard !inserted, let committed = m.committed else {
                        toMany.append(PushedToMany(slot: slot, targets: current))
                        continue
                    }
                    let before = Set(committed), after = Set(current)
                    let added = current.filter { !before.contains($0) }
                    let removed = committed.filter { !after.contains($0) }
                    if !added.isEmpty || !removed.isEmpty {
                        toMany.append(PushedToMany(slot: slot, targets: nil, added: added, removed: removed))
                    }
                }
            }
            return (toOne, toMany, keptElsewhere)
        }
        for o in insertedList {
            let (toOne, toMany, _) = relationships(o, inserted: true)
            pushed.append(
                PushedObject(
                    kind: .insert, id: o.objectID, values: o._state.values,
                    changedSlots: o.entity.attributes.map(\.slot), toOne: toOne, toMany: toMany))
            saved.inserted.append(o)
        }
        for o in updatedCandidates.values where !o.isInserted && !o.isDeleted {
            let (toOne, toMany, keptElsewhere) = relationships(o, inserted: false)
            let slots = Array(changedSlots(o).keys)
            guard !slots.isEmpty || !toOne.isEmpty || !toMany.isEmpty || keptElsewhere else { continue }
            pushed.append(
                PushedObject(
                    kind: .update, id: o.objectID, values: o._state.values, changedSlots: slots,
                    toOne: toOne, toMany: toMany))
            saved.updated.append(o)
        }
        for o in deletedList {
            pushed.append(PushedObject(kind: .delete, id: o.objectID, values: [], changedSlots: [], toOne: [], toMany: []))
            saved.deleted.append(o)
        }
        let childName = name
        let assigned = assignedStores
        let refusal = parent.performAndWait { () -> CoherenceError? in
            if let missing = parent.unknownTemporaryID(in: pushed) {
                return CoherenceError(
                    .objectNotFound,
                    "\(missing) was saved into the parent context '\(parent.name ?? "unnamed")', which no longer has it (rolled back or reset there); reset this context to go on.",
                    entity: missing.entity.name, objectID: missing)
            }
            _ = parent.applyPushed(pushed, from: childName, assignedStores: assigned)
            return nil
        }
        if let refusal { throw refusal }
        for o in insertedList + updatedCandidates.values where !o.isDeleted {
            // A pushed object keeps its temporary ID until the parent saves: as it is no longer
            // inserted here, it goes into the identity map.
            if o.isInserted, let id = o._objectID, id.isTemporaryID { registered[id] = o }
            o._state.endInserted()
            commit(o)
        }
        for o in deletedList {
            registered[o.objectID] = nil
            o._context = nil
        }
        statistics.inserts += saved.inserted.count
        statistics.updates += saved.updated.count
        statistics.deletes += saved.deleted.count
        return saved
    }

    /// The first temporary ID that a child's pushed changes name (an updated or deleted object,
    /// or a relationship's destination) and that is neither pushed as an insert nor held by
    /// this context: an object the child saved here before this context rolled back or reset.
    /// Applying it would make an object no save can write.
    func unknownTemporaryID(in pushed: [PushedObject]) -> ObjectID? {
        let inserted = Set(pushed.lazy.filter { $0.kind == .insert }.map(\.id))
        func unknown(_ id: ObjectID) -> Bool { id.isTemporaryID && !inserted.contains(id) && lookup(id) == nil }
        for p in pushed {
            if p.kind != .insert && unknown(p.id) { return p.id }
            for (_, target) in p.toOne { if let target, unknown(target) { return target } }
            for m in p.toMany { if let t = ((m.targets ?? []) + m.added).first(where: unknown) { return t } }
        }
        return nil
    }

    /// Applies a child's pushed changes (on this context's executor), with the stores the
    /// child's inserted objects were assigned to.
    func applyPushed(_ pushed: [PushedObject], from child: String?, assignedStores assigned: [ObjectID: UUID]) -> ContextEvent {
        if !assigned.isEmpty { assignedStores.merge(assigned) { _, child in child } }
        var objects: [ObjectID: ManagedObject] = [:]
        for p in pushed where p.kind == .insert {
            let o = p.id.entity.managedObjectClass.init(entity: p.id.entity)
            o._objectID = p.id
            o._context = self
            o._state.beginInserted(values: p.values)
            if p.id.isTemporaryID {
                appendInserted(o)
            } else {
                registered[p.id] = o
                insertedList.append(o)
            }
            pendingChanges.inserted.append(o)
            objects[p.id] = o
        }
        for p in pushed where p.kind == .update {
            let o = _object(for: p.id)
            for slot in p.changedSlots { o._setStoredValue(p.values[slot], at: slot) }
            objects[p.id] = o
        }
        for p in pushed where p.kind != .delete {
            guard let o = objects[p.id] else { continue }
            for (slot, target) in p.toOne {
                guard let r = o.entity.properties[slot] as? RelationshipDescription else { continue }
                o._setToOne(r, target.map { _object(for: $0) })
            }
            for m in p.toMany {
                guard let r = o.entity.properties[m.slot] as? RelationshipDescription else { continue }
                if let targets = m.targets {
                    o._setToMany(r, targets.map { _object(for: $0) })
                    continue
                }
                let members = Set(o._toMany(r).map(\.objectID))
                for id in m.removed where members.contains(id) { o._removeRelated(_object(for: id), r) }
                for id in m.added where !members.contains(id) { o._addRelated(_object(for: id), r) }
            }
        }
        for p in pushed where p.kind == .delete {
            delete(_object(for: p.id))
        }
        var event = ContextEvent(kind: .didSave, contextName: child)
        event.inserted = Set(pushed.filter { $0.kind == .insert }.map(\.id))
        event.updated = Set(pushed.filter { $0.kind == .update }.map(\.id))
        event.deleted = Set(pushed.filter { $0.kind == .delete }.map(\.id))
        processPendingChanges()
        return event
    }
}
