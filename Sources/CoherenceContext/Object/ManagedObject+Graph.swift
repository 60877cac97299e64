import Foundation

/// Lifecycle flags of a managed object.
@usableFromInline
package struct ObjectFlags: OptionSet, Sendable {
    @usableFromInline package let rawValue: UInt8
    @inlinable package init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Inserted in its context and not yet saved.
    @inlinable package static var inserted: ObjectFlags { ObjectFlags(rawValue: 1 << 0) }
    /// Deleted in its context and not yet saved.
    @inlinable package static var deleted: ObjectFlags { ObjectFlags(rawValue: 1 << 1) }
    /// A fault: its values have not been accessed yet.
    @inlinable package static var fault: ObjectFlags { ObjectFlags(rawValue: 1 << 2) }
    /// The fault's values are already in memory (fetched with the row); firing needs no query.
    @inlinable package static var prefilled: ObjectFlags { ObjectFlags(rawValue: 1 << 3) }
    /// Firing the fault found no row: the object's data is gone.
    @inlinable package static var inaccessible: ObjectFlags { ObjectFlags(rawValue: 1 << 4) }
    /// Firing the fault failed with an error (store detached, I/O error, damaged file), not for
    /// want of a row: the object is still a fault and holds no data (its entity's defaults, and
    /// the edits made since, which the context lists with the error). The next access tries
    /// again. See `ManagedObjectContext.unloaded`.
    @inlinable package static var loadFailed: ObjectFlags { ObjectFlags(rawValue: 1 << 5) }
    /// Listed in the context's changes for the next ObjectsDidChange.
    @inlinable package static var pendingUpdate: ObjectFlags { ObjectFlags(rawValue: 1 << 6) }
}

/// The state of one relationship of one object.
package enum RelationState {
    /// A to-one destination that was set (or resolved) in memory.
    case toOne(ManagedObject?)
    /// A to-many relationship.
    case toMany(ToManyState)
}

/// The contents of a to-many relationship: loaded lazily; changes made while it is still a
/// fault are kept and applied when it loads.
package final class ToManyState {
    /// The destinations, or nil while the relationship is a fault. Setting it rebuilds the
    /// membership set; single additions and removals go through `add` / `remove`.
    package var objects: [ManagedObject]? {
        get { storage }
        set {
            storage = newValue
            members = Set((newValue ?? []).map(ObjectIdentifier.init))
        }
    }
    private var storage: [ManagedObject]?
    private var members: Set<ObjectIdentifier> = []
    /// The destinations' IDs when loaded or last saved (nil: never loaded).
    package var committed: [ObjectID]?
    /// Destinations added while a fault.
    package var pendingAdds: [ManagedObject] = []
    /// Destinations removed while a fault.
    package var pendingRemoves: Set<ObjectIdentifier> = []
    /// Replaced as a whole while it could not be read: when it loads, the stored destinations
    /// not added since (not in `pendingAdds`) are removed.
    package var replacedWhileUnread = false

    init(objects: [ManagedObject]?, committed: [ObjectID]?) {
        self.objects = objects
        self.committed = committed
    }

    /// Adds a loaded destination; false when it was already there.
    /// - Complexity: O(1) amortized.
    func add(_ o: ManagedObject) -> Bool {
        guard storage != nil, members.insert(ObjectIdentifier(o)).inserted else { return false }
        storage?.append(o)
        return true
    }

    /// The relationship's unsaved edits as edits of a relationship not loaded yet (nil: none):
    /// the destinations added since it was loaded or saved, and those removed (found with
    /// `registered`), so that an object reloaded with its changes kept (a refresh merging
    /// changes, a merged save) reads its stored destinations again and keeps the edits over
    /// them. A relationship not loaded is returned as it is when it has edits.
    func unsavedEdits(registered: (ObjectID) -> ManagedObject?) -> ToManyState? {
        guard let objects = storage else {
            return pendingAdds.isEmpty && pendingRemoves.isEmpty && !replacedWhileUnread ? nil : self
        }
        let committedIDs = Set(committed ?? [])
        let added = objects.filter { !committedIDs.contains($0.objectID) }
        let removed = committedIDs.subtracting(objects.map(\.objectID)).compactMap(registered)
        guard !added.isEmpty || !removed.isEmpty else { return nil }
        let edits = ToManyState(objects: nil, committed: nil)
        edits.pendingAdds = added
        edits.pendingRemoves = Set(removed.map(ObjectIdentifier.init))
        return edits
    }

    /// Removes a loaded destination; false when it was not there.
    /// - Complexity: O(*n*) for the array removal.
    func remove(_ o: ManagedObject) -> Bool {
        guard storage != nil, members.remove(ObjectIdentifier(o)) != nil else { return false }
        if let i = storage?.firstIndex(where: { $0 === o }) { storage?.remove(at: i) }
        return true
    }
}

extension ManagedObject {
    // MARK: Public state

    /// The context the object is registered in, or nil.
    public var managedObjectContext: ManagedObjectContext? { _context }
    /// Whether the object was inserted and not yet saved.
    public var isInserted: Bool { _state.flags.contains(.inserted) }
    /// Whether the object was deleted and the deletion not yet saved.
    public var isDeleted: Bool { _state.flags.contains(.deleted) }
    /// Whether the object is a fault (its values not yet accessed).
    public var isFault: Bool { _state.flags.contains(.fault) }
    /// Whether the object has unsaved changes to its properties (an existing object).
    public var isUpdated: Bool { _isUpdated(isStoredAttribute: nil) }

    /// ``isUpdated``, with the entity's `isStoredAttributeSlot` given when the caller has it
    /// (a save takes it once per run of objects of one entity); nil: read from the entity.
    @inline(__always)
    func _isUpdated(isStoredAttribute isStored: [Bool]?) -> Bool {
        !isInserted && !isDeleted && _hasLiveContext
            && (_hasAttributeChanges(isStoredAttribute: isStored) || _hasRelationshipChanges)
    }

    /// Whether a stored attribute differs from the committed snapshot (no allocation).
    var _hasAttributeChanges: Bool { _hasAttributeChanges(isStoredAttribute: nil) }

    /// ``_hasAttributeChanges``, with the entity's `isStoredAttributeSlot` given or nil (see
    /// ``_isUpdated(isStoredAttribute:)``).
    @inline(__always)
    func _hasAttributeChanges(isStoredAttribute isStored: [Bool]?) -> Bool {
        // An object whose data could not be loaded has changes when it was edited since.
        let flags = _state.flags
        guard !flags.contains(.fault) else { return flags.contains(.loadFailed) && _hasUnloadedEdits }
        guard _state.hasSnapshot else { return flags.contains(.inaccessible) && _hasUnloadedEdits }
        return _state.hasAttributeChanges(isStoredAttribute: isStored ?? entity.isStoredAttributeSlot)
    }
    /// Whether the object is inserted, deleted or updated.
    public var hasChanges: Bool { isInserted || isDeleted || isUpdated }

    /// The attributes and relationships whose values differ from the last saved (or fetched)
    /// state, by name, as Core Data's `changedValues()`. To-one relationships map to their
    /// destination object (or `NSNull`-free `Optional<ManagedObject>.none` for nil), to-many
    /// ones to the set of their current destinations (`Set<ManagedObject>`), also when the
    /// change was made from the other side (`club.members.insert(ann)` changes `ann.clubs`).
    public func changedValues() -> [String: Any] {
        var result: [String: Any] = [:]
        if let relations = _state.relations {
            for (slot, state) in relations {
                guard case .toMany(let m) = state, let r = entity.properties[slot] as? RelationshipDescription, !r.isTransient
                else { continue }
                let changed =
                    !m.pendingAdds.isEmpty || !m.pendingRemoves.isEmpty
                    || (m.objects.map { objects in m.committed.map { Set(objects.map(\.objectID)) != Set($0) } ?? false } ?? false)
                if changed { result[r.name] = Set(_toMany(r)) }
            }
        }
        guard !_state.flags.contains(.fault) else { return result }
        let committed = _state.committedValues()
        for a in entity.attributes where !a.isTransient {
            let current = _state.values[a.slot]
            let old = committed?[a.slot] ?? a.initialValue
            if committed == nil || current != old {
                if committed == nil && current == a.initialValue && !isInserted { continue }
                result[a.name] = ManagedObject.swiftValue(current, type: a.type) as Any
            }
        }
        for r in entity.foreignKeyRelationships {
            guard case .toOne(let target)? = _state.relation(at: r.slot) else { continue }
            if target?.objectID != _committedToOneID(r) { result[r.name] = target as Any }
        }
        return result
    }

    /// The last saved (or fetched) values of `keys` (every attribute when nil), by name.
    public func committedValues(forKeys keys: [String]? = nil) -> [String: Any] {
        // A fault whose row is not read yet has no snapshot: its row is read first.
        if _state.flags.contains(.fault) && !_state.flags.contains(.prefilled) { _willAccess() }
        var result: [String: Any] = [:]
        let names = keys ?? entity.attributes.map(\.name)
        let committed = _state.committedValues()
        for name in names {
            guard let a = entity.attributesByName[name] else { continue }
            let v = committed?[a.slot] ?? .null
            result[name] = ManagedObject.swiftValue(v, type: a.type) as Any
        }
        return result
    }

    var _hasRelationshipChanges: Bool {
        guard let relations = _state.relations else { return false }
        for (slot, state) in relations {
            guard let r = entity.properties[slot] as? RelationshipDescription else { continue }
            switch state {
            case .toOne(let target):
                if r.hasForeignKey {
                    if target?.objectID != _committedToOneID(r) { return true }
                }
            case .toMany(let m):
                if !m.pendingAdds.isEmpty || !m.pendingRemoves.isEmpty { return true }
                if let objects = m.objects, let committed = m.committed {
                    // An ordered relationship changes with its order too.
                    if r.isOrdered ? !objects.lazy.map(\.objectID).elementsEqual(committed) : Set(objects.map(\.objectID)) != Set(committed)
                    {
                        return true
                    }
                }
            }
        }
        return false
    }

    // MARK: Faults

    /// Fills the object's values. When reading them fails the object stays a fault (flagged
    /// `.loadFailed`, the error kept by the context) and is not awoken; so does a fault whose
    /// context is gone (nothing can load it).
    @usableFromInline
    package final func _fireFault() {
        if _state.flags.contains(.prefilled) {
            _state.realizePrefilled()
        } else if let context = _context {
            guard context._fulfill(self) else { return }
        } else {
            return
        }
        awakeFromFetch()
    }

    /// Installs loaded values (keeps the object a fault when `asFault`).
    ///
    /// `keepRelations`: filling a fault keeps the relationship edits made while it was a fault
    /// (for example the inverse side of `person.town = townFault`); reloads that replace the
    /// object's state (merges, refreshes) drop them.
    package final func _install(_ snapshot: consuming ObjectSnapshot, asFault: Bool, keepRelations: Bool = false) {
        if _state.flags.contains(.loadFailed) {
            _installOverUnloadedEdits(snapshot, asFault: asFault, keepRelations: keepRelations)
            return
        }
        _state.install(snapshot.values, toOne: snapshot.toOne, version: snapshot.version, asFault: asFault, keepRelations: keepRelations)
    }

    // MARK: Relationships

    /// The destinations of the relationship at `slot`.
    @usableFromInline
    package final func _relatedObjects(at slot: Int) -> [ManagedObject] {
        guard let r = entity.properties[slot] as? RelationshipDescription else { return [] }
        if r.isToMany { return _toMany(r) }
        return _toOne(r).map { [$0] } ?? []
    }

    /// Replaces the destinations of the relationship at `slot`, keeping inverses in step.
    @usableFromInline
    package final func _setRelatedObjects(_ objects: [ManagedObject], at slot: Int) {
        guard let r = entity.properties[slot] as? RelationshipDescription else { return }
        if r.isToMany {
            _setToMany(r, objects)
        } else {
            _setToOne(r, objects.first)
        }
    }

    /// The destination of the to-one relationship at `slot` (nil for a to-many one), for the
    /// typed accessors.
    @usableFromInline
    package final func _toOneDestination(at slot: Int) -> ManagedObject? {
        guard let r = entity.properties[slot] as? RelationshipDescription, !r.isToMany else { return nil }
        return _toOne(r)
    }

    /// The to-one destination.
    package final func _toOne(_ r: RelationshipDescription) -> ManagedObject? {
        _willAccess()
        if _state.relations != nil, case .toOne(let o)? = _state.relation(at: r.slot) { return o }
        guard let handle = _contextHandle, handle.isAlive else { return nil }
        if r.hasForeignKey {
            if let cached = _state.cachedToOne(slot: r.slot, generation: handle.generation) { return cached }
            guard let context = handle.context, let id = _committedToOneID(r) else { return nil }
            context._registerGroupDestinations(r, of: self)
            let destination = context._object(for: id)
            _state.cacheToOne(destination, slot: r.slot, generation: handle.generation)
            return destination
        }
        guard let context = handle.context else { return nil }
        // One-to-one kept on the other side. When it cannot be read it stays unresolved (the
        // context reports the error; the next read tries again).
        guard !isInserted, let ids = context._relatedIDs(r, of: self) else {
            if isInserted { _setRelationState(.toOne(nil), at: r.slot) }
            return nil
        }
        guard let id = ids.first else {
            _setRelationState(.toOne(nil), at: r.slot)
            return nil
        }
        let o = context._object(for: id)
        _setRelationState(.toOne(o), at: r.slot)
        return o
    }

    package final func _setRelationState(_ state: RelationState, at slot: Int) {
        _state.setRelation(state, at: slot)
    }

    /// Whether this object's relationships are read from its context's source (and not empty
    /// until set): a saved object, or in a child context an object an ancestor inserted, which
    /// has a temporary ID there but whose relationships the parent holds. An object inserted in
    /// its own context has none to read.
    package final var _relationsComeFromSource: Bool {
        guard let context = _context, !isInserted, let id = _objectID else { return false }
        return !id.isTemporaryID || context.parent != nil
    }

    /// The to-many state, loading it when `load` is true.
    package final func _toManyState(_ r: RelationshipDescription, load: Bool) -> ToManyState {
        if case .toMany(let m)? = _state.relation(at: r.slot) {
            if load, m.objects == nil { _load(m, r) }
            return m
        }
        let m: ToManyState
        if !_relationsComeFromSource {
            m = ToManyState(objects: [], committed: [])
        } else {
            m = ToManyState(objects: nil, committed: nil)
        }
        _setRelationState(.toMany(m), at: r.slot)
        if load, m.objects == nil { _load(m, r) }
        return m
    }

    private func _load(_ m: ToManyState, _ r: RelationshipDescription) {
        guard let context = _context else { m.objects = []; m.committed = []; return }
        // Not readable (reported by the context): the relationship stays a fault.
        guard let ids = context._relatedIDs(r, of: self) else { return }
        _fill(m, of: r, with: ids, in: context)
    }

    /// Fills a to-many state with its loaded destinations and the edits made while it was a
    /// fault (for one replaced then, the stored destinations not added since leave it).
    func _fill(_ m: ToManyState, of r: RelationshipDescription, with ids: [ObjectID], in context: ManagedObjectContext) {
        let intended = m.replacedWhileUnread ? m.pendingAdds : nil
        var objects = ids.map { context._object(for: $0) }.filter { o in !o.isDeleted && !m.pendingRemoves.contains(ObjectIdentifier(o)) }
        for o in m.pendingAdds where !objects.contains(where: { $0 === o }) { objects.append(o) }
        m.objects = objects
        m.committed = ids
        m.pendingAdds = []
        m.pendingRemoves = []
        guard let intended else { return }
        m.replacedWhileUnread = false
        let kept = Set(intended.map(ObjectIdentifier.init))
        for o in objects where !kept.contains(ObjectIdentifier(o)) { _removeRelated(o, r) }
        if r.isOrdered { m.objects = intended.filter { !$0.isDeleted } }
    }

    /// The to-many destinations.
    package final func _toMany(_ r: RelationshipDescription) -> [ManagedObject] {
        _willAccess()
        let m = _toManyState(r, load: true)
        // Still a fault only when it could not be read: the destinations added here are all
        // that is known.
        return m.objects ?? m.pendingAdds
    }

    /// Adds to a to-many relationship without touching the inverse.
    package final func _primitiveAdd(_ o: ManagedObject, to r: RelationshipDescription) {
        let m = _toManyState(r, load: false)
        if m.objects != nil {
            guard m.add(o) else { return }
        } else {
            m.pendingRemoves.remove(ObjectIdentifier(o))
            if !m.pendingAdds.contains(where: { $0 === o }) { m.pendingAdds.append(o) }
        }
        _didChange()
    }

    /// Removes from a to-many relationship without touching the inverse.
    package final func _primitiveRemove(_ o: ManagedObject, from r: RelationshipDescription) {
        let m = _toManyState(r, load: false)
        if m.objects != nil {
            guard m.remove(o) else { return }
        } else {
            m.pendingAdds.removeAll { $0 === o }
            m.pendingRemoves.insert(ObjectIdentifier(o))
        }
        _didChange()
    }

    /// Sets a to-one relationship without touching the inverse.
    package final func _primitiveSetToOne(_ r: RelationshipDescription, _ o: ManagedObject?) {
        if case .toOne(let current)? = _state.relation(at: r.slot), current === o { return }
        _setRelationState(.toOne(o), at: r.slot)
        _didChange()
    }

    private func _adopt(_ o: ManagedObject) {
        guard let context = _context else { return }
        if o._context == nil {
            context.insert(o)
        } else {
            precondition(
                o._context === context,
                "Illegal relationship between objects in different contexts: \(self.objectID) and \(o.objectID)")
        }
    }

    /// Sets a to-one relationship and keeps the inverse in step.
    package final func _setToOne(_ r: RelationshipDescription, _ new: ManagedObject?) {
        _willAccess()
        if let new { _adopt(new) }
        let old = _toOne(r)
        if old === new { return }
        guard let inverse = r.inverseRelationship else {
            _primitiveSetToOne(r, new)
            return
        }
        // The old destination lets go first: for a relationship that is its own inverse, the
        // old destination can be this object (`a.partner = a`), whose new value must stay.
        if let old {
            if inverse.isToMany { old._primitiveRemove(self, from: inverse) } else { old._primitiveSetToOne(inverse, nil) }
        }
        _primitiveSetToOne(r, new)
        if let new {
            if inverse.isToMany {
                new._primitiveAdd(self, to: inverse)
            } else {
                if let previous = new._toOne(inverse), previous !== self { previous._primitiveSetToOne(r, nil) }
                new._primitiveSetToOne(inverse, self)
            }
        }
    }

    /// Replaces a to-many relationship and keeps inverses in step.
    package final func _setToMany(_ r: RelationshipDescription, _ newObjects: [ManagedObject]) {
        _willAccess()
        for o in newObjects { _adopt(o) }
        let current = _toMany(r)
        if let context = _context, !isInserted, case .toMany(let m)? = _state.relation(at: r.slot), m.objects == nil {
            // Not readable: the members it has in the store are removed once it loads.
            m.replacedWhileUnread = true
            context.pendingReplaces.append((self, r))
        }
        let newSet = Set(newObjects.map(ObjectIdentifier.init))
        let currentSet = Set(current.map(ObjectIdentifier.init))
        for o in current where !newSet.contains(ObjectIdentifier(o)) { _removeRelated(o, r) }
        for o in newObjects where !currentSet.contains(ObjectIdentifier(o)) { _addRelated(o, r) }
        if r.isOrdered, let m = Optional(_toManyState(r, load: false)), let objects = m.objects {
            // (Members the same, order changed: still a change of this object, to be saved.)
            let reordered = !objects.elementsEqual(newObjects, by: ===)
            m.objects = newObjects
            if reordered { _didChange() }
        }
    }

    /// Adds one destination to a to-many relationship, keeping the inverse in step.
    package final func _addRelated(_ o: ManagedObject, _ r: RelationshipDescription) {
        _primitiveAdd(o, to: r)
        guard let inverse = r.inverseRelationship else { return }
        if inverse.isToMany {
            o._primitiveAdd(self, to: inverse)
        } else {
            if let previous = o._toOne(inverse), previous !== self { previous._primitiveRemove(o, from: r) }
            o._primitiveSetToOne(inverse, self)
        }
    }

    /// Removes one destination from a to-many relationship, keeping the inverse in step.
    package final func _removeRelated(_ o: ManagedObject, _ r: RelationshipDescription) {
        _primitiveRemove(o, from: r)
        guard let inverse = r.inverseRelationship else { return }
        if inverse.isToMany { o._primitiveRemove(self, from: inverse) } else { o._primitiveSetToOne(inverse, nil) }
    }

    /// Current to-one destination ID for a foreign-key relationship (for saves).
    package final func _currentToOneID(_ r: RelationshipDescription) -> ObjectID? {
        _state.currentToOneID(r, objectID: _objectID)
    }
}

extension ManagedObject: QueryRow {
    package var queryEntity: EntityDescription { entity }
    package var queryObjectID: ObjectID { objectID }
    package func queryValue(at slot: Int) -> StoredValue { _storedValue(at: slot) }
    package func queryToOne(_ relationship: RelationshipDescription) -> (any QueryRow)? { _toOne(relationship) }
    package func queryToMany(_ relationship: RelationshipDescription) -> [any QueryRow] { _toMany(relationship) }
}
