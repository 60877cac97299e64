import Foundation

/// An object whose data could not be loaded because reading its row failed (not because the row
/// is gone): the error met, and the attribute slots edited since (their values are in the
/// object; they are applied over the row once it loads).
struct UnloadedObject {
    let object: ManagedObject
    var error: CoherenceError
    var editedSlots: [Int] = []
}

extension ManagedObjectContext {
    // MARK: Faults that cannot be filled

    /// Reports an error met while loading an object's data or relationships: never thrown at
    /// the caller who happened to touch the object, never silent.
    func reportLoadError(_ error: CoherenceError) {
        // The single place load errors are reported. Not to the strategy's error handler: a
        // failed load is not a failed propagation, and `waitForPendingSaves()` must not rethrow it.
        CoherenceLogging.log(.error, "context", "'\(name ?? "unnamed")' could not load data: \(error)")
        hooks.loadErrorObserver?(error)
    }

    /// The error with the object named (an error from a store names no object).
    static func naming(_ object: ManagedObject, in error: CoherenceError) -> CoherenceError {
        naming(object._objectID, in: error)
    }

    /// The error with the object `id` names named.
    static func naming(_ id: ObjectID?, in error: CoherenceError) -> CoherenceError {
        var error = error
        if error.objectID == nil { error.objectID = id }
        if error.entityName == nil { error.entityName = id?.entity.name }
        return error
    }

    /// Records that filling `object` failed with `error`: the object stays a fault with no data
    /// (its entity's defaults: nothing from an earlier load is presented as its row), the error
    /// is kept, and reported the first time. Edits made since are kept (see
    /// ``_noteUnloadedEdit(_:slot:)``).
    func _noteLoadFailure(_ object: ManagedObject, _ error: CoherenceError) {
        let error = Self.naming(object, in: error)
        let key = ObjectIdentifier(object)
        if unloaded[key] != nil, object._state.flags.contains(.loadFailed) {
            unloaded[key]?.error = error
            return
        }
        object._state.failLoad(defaults: object.entity.initialValues)
        unloaded[key] = UnloadedObject(object: object, error: error)
        reportLoadError(error)
    }

    /// Notes an edit of an object whose data could not be loaded.
    func _noteUnloadedEdit(_ object: ManagedObject, slot: Int) {
        let key = ObjectIdentifier(object)
        guard unloaded[key] != nil else { return }
        if unloaded[key]?.editedSlots.contains(slot) == false { unloaded[key]?.editedSlots.append(slot) }
    }

    /// Forgets the record of an object whose data now loaded, returning the slots edited meanwhile.
    func _takeUnloadedEdits(_ object: ManagedObject) -> [Int] {
        unloaded.removeValue(forKey: ObjectIdentifier(object))?.editedSlots ?? []
    }

    /// Drops the edits made to objects whose data could not be loaded (rollback): they read
    /// their entity's defaults again until they load.
    func discardUnloadedEdits() {
        for (key, record) in unloaded where !record.editedSlots.isEmpty {
            record.object._state.discardUnloadedEdits(defaults: record.object.entity.initialValues)
            if record.object._state.flags.contains(.loadFailed) {
                unloaded[key]?.editedSlots = []
            } else {
                unloaded[key] = nil  // its row turned out gone: nothing is left to keep
            }
        }
    }

    /// Forgets an object's load failure (its changes are discarded or it left the context).
    func forgetLoadFailure(_ object: ManagedObject) {
        guard !unloaded.isEmpty, unloaded.removeValue(forKey: ObjectIdentifier(object)) != nil else { return }
        object._state.endLoadFailure(defaults: object.entity.initialValues)
    }

    /// Before a save: loads the changed objects whose data is not in memory but is needed to
    /// save them — objects edited or deleted while it could not be loaded (the edits then apply
    /// over their rows), and faults whose foreign key changed through an inverse relationship
    /// (the change only shows against their row). Throws when one cannot be loaded (its
    /// changes are kept).
    func loadChangedFaults() throws(CoherenceError) {
        var failures: [CoherenceError] = []
        func load(_ o: ManagedObject) {
            guard needsDataToSave(o) else { return }
            do throws(CoherenceError) {
                try o.fulfillFault()
            } catch {
                failures.append(error)
            }
        }
        updatedCandidates.values.forEachBorrowed { load($0) }
        if !unloaded.isEmpty { deletedList.forEachBorrowed { load($0) } }
        if !failures.isEmpty { throw Self.unsavable(failures, "has unsaved changes, but its data could not be loaded") }
    }

    private func needsDataToSave(_ o: ManagedObject) -> Bool {
        let flags = o._state.flags
        if flags.contains(.fault) && !flags.contains(.prefilled) {
            if flags.contains(.deleted) || o._changesForeignKeyWhileFault { return true }
            return flags.contains(.loadFailed) && o._hasUnloadedEdits
        }
        // Its row turned out gone while edits were kept: fulfillFault() says so.
        return flags.contains(.inaccessible) && !unloaded.isEmpty && unloaded[ObjectIdentifier(o)] != nil
    }

    /// The save's error when objects' changes cannot be saved: the first failure's code and
    /// object, every failure in `underlyingErrors`.
    private static func unsavable(_ failures: [CoherenceError], _ problem: String) -> CoherenceError {
        let first = failures[0]
        var error = CoherenceError(
            first.code,
            "\(first.objectID.map { "\($0)" } ?? "An object") \(problem), so the save wrote nothing (the changes are kept): \(first.message)",
            entity: first.entityName, objectID: first.objectID, store: first.store, sql: first.sql)
        error.underlyingErrors = failures
        return error
    }

    /// Whether the cascade or nullify rule of `r` ran without knowing all of `o`'s destinations
    /// (the relationship could not be read when `o` was deleted).
    func deleteRuleMissedDestinations(_ r: RelationshipDescription, of o: ManagedObject) -> Bool {
        guard !r.isTransient, r.deleteRule == .cascade || r.deleteRule == .nullify, !o.isInserted else { return false }
        if r.isToMany {
            guard case .toMany(let m)? = o._state.relation(at: r.slot) else { return false }
            return m.objects == nil
        }
        // A to-one destination comes from the object's row, or (kept on the other side) is resolved.
        return r.hasForeignKey ? o._state.flags.contains(.loadFailed) : o._state.relation(at: r.slot) == nil
    }

    /// Before a save: completes the delete rules of deleted objects whose relationships could
    /// not be read when they were deleted (loading them now); throws when one still cannot be
    /// read (the deletes are kept).
    func completePendingDeleteRules() throws(CoherenceError) {
        var failures: [CoherenceError] = []
        var blocked: [ManagedObject] = []
        while let o = pendingDeleteRules.popLast() {
            guard o.isDeleted, o._context === self else { continue }
            do throws(CoherenceError) {
                try o.fulfillFault()
                for r in o.entity.relationships where deleteRuleMissedDestinations(r, of: o) {
                    try o.fulfillFault(forRelationshipNamed: r.name)
                }
            } catch {
                failures.append(Self.naming(o, in: error))
                blocked.append(o)
                continue
            }
            applyDeleteRules(o)
        }
        pendingDeleteRules = blocked
        if !failures.isEmpty {
            throw Self.unsavable(failures, "is deleted, but its relationships could not be read to apply its delete rules")
        }
    }

    /// Before a save: loads the to-many relationships replaced while they could not be read,
    /// so the members they had leave them; throws when one still cannot be read (the
    /// replacement is kept).
    func completePendingReplaces() throws(CoherenceError) {
        var failures: [CoherenceError] = []
        var blocked: [(object: ManagedObject, relationship: RelationshipDescription)] = []
        while let (o, r) = pendingReplaces.popLast() {
            guard o._context === self, !o.isDeleted, case .toMany(let m)? = o._state.relation(at: r.slot), m.replacedWhileUnread else {
                continue
            }
            do throws(CoherenceError) {
                try o.fulfillFault(forRelationshipNamed: r.name)
            } catch {
                failures.append(Self.naming(o, in: error))
                blocked.append((o, r))
            }
        }
        pendingReplaces = blocked
        if !failures.isEmpty {
            throw Self.unsavable(failures, "has a relationship replaced while it could not be read, and it still cannot be")
        }
    }

    /// Destinations of a relationship for an object, loading it for the object's whole fetch
    /// group in one query; nil when it cannot be read (the error is reported, and the
    /// relationship stays a fault, to be read again later).
    package func _relatedIDs(_ r: RelationshipDescription, of object: ManagedObject) -> [ObjectID]? {
        do throws(CoherenceError) {
            return try _loadRelatedIDs(r, of: object)
        } catch {
            var error = Self.naming(object, in: error)
            if error.propertyName == nil { error.propertyName = r.name }
            reportLoadError(error)
            return nil
        }
    }
}
