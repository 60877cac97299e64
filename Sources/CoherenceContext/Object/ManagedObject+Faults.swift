import Foundation

extension ManagedObject {
    // MARK: Fulfilling faults

    /// Loads the object's data now if it is a fault, and throws when that fails.
    ///
    /// Reading a property fires the fault too, but a property cannot throw: when the row
    /// cannot be read (its store is detached, an I/O error, a damaged file) the object stays a
    /// fault, the property reads its entity's default value, the context logs the error
    /// (``CoherenceLogging``) and keeps it, and the next access tries again. Call this to learn
    /// whether the data is there:
    ///
    /// ```swift
    /// guard let person = context.object(with: id) as? Person else { return }
    /// try person.fulfillFault()   // throws instead of reading defaults
    /// print(person.name)
    /// ```
    ///
    /// Edits made while the data could not be loaded are kept: they are applied over the row
    /// once it loads, and ``ManagedObjectContext/save()`` loads it first (or throws).
    ///
    /// - Throws: the error reading the row met (`.storeNotAttached`, `.storeReadFailed` with
    ///   the SQLite error in `underlyingErrors`, …), with ``CoherenceError/objectID`` set;
    ///   `.objectNotFound` when the row no longer exists; `.invalidRequest` for a fault whose
    ///   context is gone (or was reset), which nothing can load.
    public func fulfillFault() throws(CoherenceError) {
        guard let context = _context else {
            _willAccess()
            guard !_state.flags.contains(.fault) else {
                throw CoherenceError(
                    .invalidRequest, "\(objectID) is a fault whose context is gone (or was reset): nothing can load its data.",
                    entity: entity.name, objectID: _objectID)
            }
            return
        }
        context.assertOnExecutor(touching: self)
        _willAccess()
        if _state.flags.contains(.loadFailed), let error = context.unloaded[ObjectIdentifier(self)]?.error { throw error }
        if _state.flags.contains(.inaccessible) {
            throw CoherenceError(
                .objectNotFound, "The row of \(objectID) no longer exists (deleted).",
                entity: entity.name, objectID: objectID)
        }
    }

    /// Loads the object's data and the named relationship now, and throws when that fails.
    ///
    /// A relationship read that cannot be loaded stays a fault (a to-many one reads only the
    /// objects added to it here; a to-one one kept on the other side reads nil), the context
    /// reports the error, and the next read tries again; this throws the error instead. For a
    /// to-one relationship it resolves the destination object, which may itself be a fault
    /// (its own ``fulfillFault()`` loads its data).
    ///
    /// ```swift
    /// try town.fulfillFault(forRelationshipNamed: "people")
    /// ```
    ///
    /// - Throws: `.unknownKey` when the entity has no such relationship; otherwise as
    ///   ``fulfillFault()``.
    public func fulfillFault(forRelationshipNamed name: String) throws(CoherenceError) {
        guard let r = entity.relationshipsByName[name] else {
            throw CoherenceError(
                .unknownKey, "'\(name)' is not a relationship of entity '\(entity.name)'.",
                entity: entity.name, property: name, objectID: _objectID)
        }
        try fulfillFault()
        guard let context = _context, _relationsComeFromSource else { return }
        if r.isToMany {
            let m = _toManyState(r, load: false)
            guard m.objects == nil else { return }
            let ids = try context._loadRelatedIDs(r, of: self)
            if m.objects == nil { _fill(m, of: r, with: ids, in: context) }
        } else if !r.hasForeignKey, _state.relation(at: r.slot) == nil {
            let ids = try context._loadRelatedIDs(r, of: self)
            _setRelationState(.toOne(ids.first.map { context._object(for: $0) }), at: r.slot)
        }
    }

    /// Installs a loaded row into an object whose earlier load failed: the edits made since
    /// are applied over the row's values, so they are changes against it (and saved).
    package final func _installOverUnloadedEdits(_ snapshot: consuming ObjectSnapshot, asFault: Bool, keepRelations: Bool) {
        let slots = _context?._takeUnloadedEdits(self) ?? []
        let edits = slots.map { (slot: $0, value: _state.values[$0]) }
        // Loaded with changes: not a fault. Its caller awakes only objects it loads as non-faults.
        // (Installing ends the load failure.)
        _state.install(
            snapshot.values, toOne: snapshot.toOne, version: snapshot.version, asFault: asFault && edits.isEmpty,
            keepRelations: keepRelations)
        guard !edits.isEmpty else { return }
        if asFault { awakeFromFetch() }
        for edit in edits where _state.values[edit.slot] != edit.value {
            _state.setValue(edit.value, at: edit.slot)
        }
        _didChange()
    }

    /// Whether a to-one relationship kept in this object's row (a foreign key) was set while the
    /// object is a fault (through the inverse side): whether it changed shows only against the row.
    var _changesForeignKeyWhileFault: Bool {
        guard let relations = _state.relations else { return false }
        return relations.contains { slot, state in
            guard case .toOne = state else { return false }
            return (entity.properties[slot] as? RelationshipDescription)?.hasForeignKey == true
        }
    }

    /// Whether the context lists edits made while the object's data could not be loaded.
    var _hasUnloadedEdits: Bool {
        guard let context = _context, let record = context.unloaded[ObjectIdentifier(self)] else { return false }
        return !record.editedSlots.isEmpty
    }
}
