import Foundation

/// How a save resolves conflicts, as Core Data's `NSMergePolicy`.
///
/// | Policy | Version conflict (row changed in the store) | Uniqueness conflict |
/// |---|---|---|
/// | ``error`` | the save throws, listing every conflict | the save throws |
/// | ``mergeByPropertyStoreTrump`` | per property: where both changed, the store wins | keep the stored values |
/// | ``mergeByPropertyObjectTrump`` | per property: where both changed, memory wins | upsert: the stored row takes the in-memory values |
/// | ``overwrite`` | the in-memory object is written whole | upsert, as object trump |
/// | ``rollback`` | the object's changes are dropped; the store wins | keep the stored values |
///
/// A row deleted in the store (new version 0) cannot be written again: under every policy but
/// ``error`` the object's changes are dropped and it is removed from the context.
///
/// Subclass to write your own policy: override ``resolve(conflicts:in:)``, change the objects
/// (for example with `setValue(_:forKey:)` and ``ManagedObjectContext/refresh(_:mergeChanges:)``),
/// and return; the context then saves again. Call `super` to apply the built-in behaviour.
open class MergePolicy: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: the built-in policies hold only an immutable kind; subclasses must
    // keep their own state immutable or synchronized.

    enum Kind: String, Sendable { case error, storeTrump, objectTrump, overwrite, rollback }
    let kind: Kind

    init(kind: Kind) { self.kind = kind }

    /// Creates a custom policy that starts from a built-in behaviour (call `super.resolve`).
    public init(basedOn policy: MergePolicy) { self.kind = policy.kind }

    /// Fail the save with every conflict.
    public static let error = MergePolicy(kind: .error)
    /// Merge property by property; where both sides changed, the store wins.
    public static let mergeByPropertyStoreTrump = MergePolicy(kind: .storeTrump)
    /// Merge property by property; where both sides changed, the in-memory value wins.
    public static let mergeByPropertyObjectTrump = MergePolicy(kind: .objectTrump)
    /// Write the in-memory objects whole over the stored ones.
    public static let overwrite = MergePolicy(kind: .overwrite)
    /// Drop the in-memory changes of conflicting objects.
    public static let rollback = MergePolicy(kind: .rollback)

    /// The policy's kind, for example `MergePolicy(objectTrump)`.
    open var description: String { "MergePolicy(\(kind.rawValue))" }

    /// Resolves conflicts by changing the context's objects; throw to fail the save.
    /// Called on the context's executor.
    open func resolve(conflicts: [SaveConflict], in context: ManagedObjectContext) throws {
        if kind == .error {
            var error = CoherenceError(.conflict, "The save has \(conflicts.count) conflict(s) and the merge policy is .error.")
            error.conflicts = conflicts
            throw error
        }
        for conflict in conflicts {
            if conflict.kind == .uniqueness {
                try context.resolveUniqueness(conflict, policy: kind)
            } else {
                try context.resolveVersion(conflict, policy: kind)
            }
        }
    }
}

extension ManagedObjectContext {
    /// Applies a built-in policy to a version conflict.
    func resolveVersion(_ conflict: SaveConflict, policy: MergePolicy.Kind) throws(CoherenceError) {
        guard let object = lookup(conflict.objectID) else { return }
        guard let persisted = conflict.persistedValues else {
            // The row is gone: nothing can be written to it, and the objects related to it
            // no longer are (as when another context's deletion is merged), so that none of
            // them writes a reference to the missing row.
            for r in object.entity.relationships where !r.isTransient { nullify(object, r) }
            forget(object)
            return
        }
        let entity = object.entity
        let cached = object._state.committedValues() ?? persisted
        switch policy {
        case .error:
            return
        case .rollback:
            updatedCandidates.remove(object)
            deletedSet.remove(ObjectIdentifier(object))
            deletedList.removeAll { $0 === object }
            object._state.unmarkDeleted()
        case .storeTrump, .objectTrump:
            for a in entity.attributes where !a.isTransient {
                let mine = object._state.values[a.slot], theirs = persisted[a.slot], base = cached[a.slot]
                let iChanged = mine != base, theyChanged = theirs != base
                if theyChanged && (!iChanged || policy == .storeTrump) { object._state.setValue(theirs, at: a.slot) }
            }
            for r in entity.foreignKeyRelationships {
                let theirs = persisted[r.slot], base = cached[r.slot]
                let iChanged: Bool
                if case .toOne(let o)? = object._state.relation(at: r.slot) {
                    iChanged = o?.objectID != object._committedToOneID(r)
                } else {
                    iChanged = false
                }
                if theirs != base && (!iChanged || policy == .storeTrump) {
                    object._state.setRelation(nil, at: r.slot)
                }
            }
        case .overwrite:
            // The whole object is written over the row: keep the to-one destinations it was
            // loaded with where it did not change them (they would otherwise follow the store).
            for r in entity.foreignKeyRelationships {
                if case .toOne? = object._state.relation(at: r.slot) { continue }
                let loaded = object._committedToOneID(r)
                object._setRelationState(.toOne(loaded.map { _object(for: $0) }), at: r.slot)
            }
        }
        // The object now builds on the stored row (whose foreign keys name its to-one
        // destinations).
        object._state.rebase(onto: persisted, toOne: nil, version: conflict.newVersion)
        // Rolled back: the object takes the stored row's values, and drops its relationship changes.
        if policy == .rollback { object._state.rollBack() }
        // With overwrite, every property that differs from the stored row is now a change, so
        // the whole object is written (including properties only the store changed, even to nil).
        pendingChanges.refreshed[ObjectIdentifier(object)] = object
        if object.isDeleted { try applyDeleteRulesToNewDestinations(of: object) }
    }

    /// A deleted object whose row changed since it was loaded may have destinations it did not
    /// know when its delete rules ran (another context related objects to it): its cascade and
    /// nullify rules reach them too, so that no row keeps a key of the deleted one.
    private func applyDeleteRulesToNewDestinations(of object: ManagedObject) throws(CoherenceError) {
        for r in object.entity.relationships where !r.isTransient && !r.hasForeignKey {
            guard r.deleteRule == .cascade || r.deleteRule == .nullify, let inverse = r.inverseRelationship else { continue }
            let known = Set(object._relatedObjects(at: r.slot).map(\.objectID))
            let now = try persistentStoreCoordinator.related(r, of: [object.objectID])[object.objectID] ?? []
            for id in now where !known.contains(id) {
                let d = _object(for: id)
                if d.isDeleted { continue }
                if r.deleteRule == .cascade {
                    delete(d)
                } else if inverse.isToMany {
                    d._primitiveRemove(object, from: inverse)
                } else {
                    d._primitiveSetToOne(inverse, nil)
                }
            }
        }
    }

    /// Applies a built-in policy to a uniqueness conflict.
    func resolveUniqueness(_ conflict: SaveConflict, policy: MergePolicy.Kind) throws {
        guard let object = lookup(conflict.objectID), let existingID = conflict.conflictingObjectIDs.first else { return }
        // The save is refused with `message`, listing the conflict.
        func refusal(_ message: String) -> CoherenceError {
            var error = CoherenceError(.conflict, message, entity: conflict.objectID.entity.name, objectID: conflict.objectID)
            error.conflicts = [conflict]
            return error
        }
        let constraint = conflict.constraint.joined(separator: ", ")
        guard !existingID.isTemporaryID, let persisted = conflict.persistedValues else {
            throw refusal("\(conflict.objectID) and \(existingID), both new, have the same values for [\(constraint)].")
        }
        // A row of another entity (a sibling sharing its parent's constraint): the object
        // cannot become that row, whose values are laid out for its own entity.
        guard existingID.entity === object.entity else {
            throw refusal(
                "\(conflict.objectID) has the same values for [\(constraint)] as \(existingID), "
                    + "an object of another entity; it cannot take over that row.")
        }
        // The stored row's own object changed its constrained values (or is deleted) in this
        // save: the clash is with a value this save is moving away (a chain of renames), not
        // with a row to take over. Taking it over would drop that object's changes and write
        // this object's values into its row; the save is refused instead, changing nothing.
        if let other = registered[existingID], other !== object, other.isDeleted || Self.changes(conflict.constraint, of: other) {
            throw refusal(
                "\(conflict.objectID) takes values for [\(constraint)] that \(existingID) gives up "
                    + "in the same save; save the objects in an order where no two rows hold the same values at once.")
        }
        // The object takes over the stored row's identity; an object already registered for
        // that row is replaced.
        if let other = registered[existingID], other !== object { forget(other) }
        let key = ObjectIdentifier(object)
        let wasInserted = object._state.flags.contains(.inserted)
        if wasInserted {
            insertedList.removeAll { $0 === object }
            object._state.endInserted()
        }
        rekey(
            object, to: ObjectID(entity: existingID.entity, storeIdentifier: existingID.storeIdentifier, primaryKey: existingID.primaryKey))
        // The object now builds on the stored row, keeping its values.
        object._state.rebase(onto: persisted, toOne: nil, version: conflict.newVersion)
        switch policy {
        case .objectTrump, .overwrite:
            updatedCandidates.insert(object)  // upsert: the stored row takes the in-memory values
        default:
            object._state.rollBack()  // keep the stored values
            updatedCandidates.remove(object)
        }
        pendingChanges.refreshed[key] = object
    }

    /// Whether `object` has unsaved changes to any of the attributes named `names`.
    private static func changes(_ names: [String], of object: ManagedObject) -> Bool {
        names.contains { name in
            guard let a = object.entity.attributesByName[name] else { return false }
            return object._state.committedValue(at: a.slot).map { $0 != object._state.values[a.slot] } ?? false
        }
    }

    /// Removes an object from the context (its row is gone or replaced).
    func forget(_ object: ManagedObject) {
        let key = ObjectIdentifier(object)
        if !(object.isInserted && object.objectID.isTemporaryID) { registered[object.objectID] = nil }
        updatedCandidates.remove(object)
        if deletedSet.remove(key) != nil { deletedList.removeAll { $0 === object } }
        if object._state.flags.contains(.inserted) { insertedList.removeAll { $0 === object } }
        if !unloaded.isEmpty { unloaded[key] = nil }
        object._state.markForgotten()
        pendingChanges.invalidated[key] = object
    }
}
