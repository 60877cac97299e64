import Foundation

// How typed accessors find their property's slot (see `SlotPlan`): each object points to the slot
// template of its class and entity, and an accessor reads its wrapper there, through the same
// storage key path it would use on the object itself.

extension EntityDescription {
    /// The slot template for a new object of `type` with this entity, unretained (the entity's
    /// slot plans keep it alive): the entity's own for its class, one made on first use for
    /// another class (a subclass outside the model); nil for the probes reflection makes, and
    /// when the class has no template. (Each template was checked through `Mirror` when it was
    /// made, and never changes; debug builds check its class here.)
    @inline(__always)
    func slotTemplate(for type: ManagedObject.Type) -> UnretainedReference<AnyObject>? {
        let own = objectClass.map { ObjectIdentifier($0) == ObjectIdentifier(type) } ?? false
        let template = own ? unretainedObjectTemplate : otherSlotTemplate(for: type)
        assert(
            template.map { ObjectIdentifier(Swift.type(of: $0.object)) == ObjectIdentifier(type) } ?? true,
            "a slot template of another class")
        return template
    }

    /// The slot template of a class other than the entity's (see ``slotTemplate(for:)``).
    @inline(never)
    private func otherSlotTemplate(for type: ManagedObject.Type) -> UnretainedReference<AnyObject>? {
        slotPlan(for: type)?.template.map { UnretainedReference($0) }
    }

    /// Makes the slot plan of the entity's class. Called when the model loads.
    /// - Throws: ``ModelError/Code/classMismatch`` if the class's wrappers cannot be told apart.
    func prepareSlotPlan() throws(ModelError) {
        let type = managedObjectClass
        guard type != ManagedObject.self else { return }
        guard let plan = makeSlotPlan(for: type) else {
            throw ModelError(
                .classMismatch, entity: name,
                "Coherence cannot tell the property wrappers of class '\(type)' apart: each must be made once, by the class's initializer."
            )
        }
        objectClassData = plan
        objectTemplate = plan.template
    }

    /// The slot plan of `type` for this entity: the entity's own, or one made on first use for
    /// another class. Nil for the placeholder entity of reflection's probes, for an entity not
    /// loaded in a model yet, and for classes whose wrappers cannot be told apart.
    func slotPlan(for type: ManagedObject.Type) -> SlotPlan? {
        if type == managedObjectClass { return objectClassData as? SlotPlan }
        guard isLoaded, type != ManagedObject.self else { return nil }
        let key = ObjectIdentifier(type)
        if let plan = otherClassData.withLock({ $0[key] }) { return plan as? SlotPlan }
        // Made outside the lock: making it runs the class's initializer.
        guard let plan = makeSlotPlan(for: type) else { return nil }
        return otherClassData.withLock { plans in
            if let first = plans[key] { return first as? SlotPlan }
            plans[key] = plan
            return plan
        }
    }

    /// Makes the recorded object of `type` (its wrappers hold tokens of their places), pairs each
    /// place with the slot of the property the wrapper's storage is named after, and makes the
    /// template by replaying the places; the template is kept only if every wrapper holds its
    /// slot. Nil when two wrappers hold one token (one was copied into the other) or one holds
    /// none.
    ///
    /// - Complexity: two objects made and reflected; done once per entity and class.
    func makeSlotPlan(for type: ManagedObject.Type) -> SlotPlan? {
        let (recorded, declarations) = WrapperRecording.recording { type.init(entity: ModelReflection.placeholderEntity) }
        var slotsByPlace = [Int16](repeating: -1, count: declarations.count)
        var seen = Set<Int>()
        for (label, wrapper) in recorded.slottedWrappers() {
            let place = -2 - wrapper.slot
            guard place >= 0, place < slotsByPlace.count, seen.insert(place).inserted,
                let slot = Int16(exactly: slot(forStorage: label))  // a wrapper keeps two bytes
            else { return nil }
            slotsByPlace[place] = slot
        }
        // Wrappers made while the object is made that are not its own (those of an object made
        // in a property's initial value) have places too, with no slot.
        let (template, replayed) = WrapperRecording.recording(replaying: slotsByPlace) {
            type.init(entity: ModelReflection.placeholderEntity)
        }
        let checked = replayed.count == slotsByPlace.count && template.misplacedWrapper(for: self) == nil
        return SlotPlan(objectClass: type, recordedObject: recorded, slotsByPlace: slotsByPlace, template: checked ? template : nil)
    }

    /// The slot of the property a wrapper whose storage is named `label` (`_name`) is for: that
    /// of property `name`, or -1 when the entity has none.
    func slot(forStorage label: String) -> Int {
        label.hasPrefix("_") ? propertiesByName[String(label.dropFirst())]?.slot ?? -1 : -1
    }
}

extension ManagedObject {
    /// The slot a typed accessor reads: that of its wrapper in the object's slot template, or, on
    /// objects without one (probes), the exact path. -1: the accessor returns a placeholder.
    ///
    /// `storage` is only ever projected: inlined, each projection is a field load at the
    /// wrapper's offset, and the key path is never made.
    @inlinable @inline(__always)
    static func _placedSlot<Root: ManagedObject, Wrapper: SlottedPropertyWrapper>(
        of object: Root, storage: ReferenceWritableKeyPath<Root, Wrapper>
    ) -> Int {
        if let template = object._slotTemplate {
            // Invariant: the template is an object of exactly the object's class (see
            // `_slotTemplate`), so a `Root`; debug builds check the cast. The object keeps it
            // alive (through its entity).
            let slot = template.withObject { Int(unsafeDowncast($0, to: Root.self)[keyPath: storage]._slot) }
            return slot >= 0 ? slot : object._slot(forToken: nil)
        }
        let token = object._recordedObject(as: Root.self).map { Int($0[keyPath: storage]._slot) }
        return object._slot(forToken: token)
    }

    /// The recorded object of this object's class for its entity (see `SlotPlan`); nil for the
    /// probes reflection makes, and for classes whose wrappers cannot be told apart.
    @usableFromInline @inline(never)
    final func _recordedObject<Root: ManagedObject>(as type: Root.Type) -> Root? {
        entity.slotPlan(for: Swift.type(of: self))?.recordedObject as? Root
    }

    /// The slot of the wrapper whose counterpart in the recorded object holds `token`, or -1 when
    /// the accessor returns a placeholder: on a key path probe (which records the slot), or for a
    /// property the object's entity does not have (allowed on reflection's probes only; stops
    /// otherwise).
    @usableFromInline @inline(never)
    final func _slot(forToken token: Int?) -> Int {
        let slot = token.flatMap { entity.slotPlan(for: type(of: self))?.slot(forToken: $0) } ?? -1
        if let probe = _probe {
            probe.record(slot)
            return -1
        }
        if slot < 0 {
            _allowUnplacedProperty()
            return -1
        }
        return slot
    }

    /// Makes this object a key path probe: its typed reads record the slot of the property they
    /// are for and return placeholders.
    func _becomeProbe(_ recorder: KeyPathProbe.Recorder) {
        _probe = recorder
        _slotTemplate = nil
    }

    /// The object's property wrappers with their storage names (`_name`): its class's own first,
    /// then each superclass's.
    func slottedWrappers() -> [(label: String, wrapper: any SlottedPropertyWrapper)] {
        var result: [(label: String, wrapper: any SlottedPropertyWrapper)] = []
        var mirror: Mirror? = Mirror(reflecting: self)
        while let m = mirror {
            for child in m.children {
                if let wrapper = child.value as? any SlottedPropertyWrapper { result.append((child.label ?? "", wrapper)) }
            }
            mirror = m.superclassMirror
        }
        return result
    }

    /// The storage name of a wrapper that does not hold the slot its storage name gives in
    /// `entity` (-1 when `entity` has no such property); nil when every wrapper does.
    func misplacedWrapper(for entity: EntityDescription) -> String? {
        slottedWrappers().first { label, wrapper in wrapper.slot != entity.slot(forStorage: label) }?.label
    }

    /// The default value of the attribute at `slot`, for a typed read whose stored value does not
    /// convert: a null in a non-optional attribute, or a value of another type that another
    /// program wrote (text in an integer column, an `Int16` out of range). An accessor cannot
    /// throw: the second is logged as an error, once per attribute name (`value(forKey:as:)` throws
    /// `.typeMismatch` for it).
    @usableFromInline @inline(never)
    package final func _attributeDefault<Value: PersistentValue>(at slot: Int, as type: Value.Type) -> Value? {
        guard slot < entity.properties.count, let a = entity.properties[slot] as? AttributeDescription else { return nil }
        let found = _storedValue(at: slot)
        if !found.isNull && Self.loggedMismatches.withLock({ $0.insert(entity.name + "." + a.name).inserted }) {
            CoherenceLogging.log(
                .error, "context",
                "'\(entity.name).\(a.name)' of \(_objectID.map { "\($0)" } ?? "a new object") holds \(found.kindName), which is not a \(Value.self): read as the attribute's default (logged once per attribute name)."
            )
        }
        guard let stored = a.defaultValue else { return nil }
        return Value(storedValue: stored)
    }

    /// The attributes (`Entity.attribute`) whose wrong-typed stored value a typed read has
    /// logged (see ``_attributeDefault(at:as:)``): each is logged once in a process.
    private static let loggedMismatches = LockedValue<Set<String>>([])

    /// Stops on a typed property the object's entity does not have: the object was created with
    /// an entity that does not match its class.
    @usableFromInline @inline(never)
    package final func _unplacedProperty() -> Never {
        preconditionFailure(
            "An object of class '\(type(of: self))' was read through a property its entity '\(entity.name)' does not have: the object was created with an entity that does not match its class"
        )
    }

    /// For a property the object's entity does not have: returns when the object is one of the
    /// probes that reflecting a class makes (code the class runs on them, such as a `deinit` that
    /// reads a property, gets placeholders, and writes are dropped); stops otherwise
    /// (``_unplacedProperty()``).
    @usableFromInline @inline(never)
    package final func _allowUnplacedProperty() {
        if entity === ModelReflection.placeholderEntity { return }
        _unplacedProperty()
    }
}
