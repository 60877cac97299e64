// `_forEachField` (the standard library's field reflection, SPI): the stored-field offsets of a
// class, read once per class; every placement is checked on a probe object with `Mirror`.
@_spi(Reflection) import Swift

/// A property wrapper (``Attribute``, ``Relationship``, ``Transformed``) whose storage in each
/// object holds the slot of its property.
///
/// Typed accessors read the slot from the wrapper's own storage (`object[keyPath: storage]._slot`).
/// Once the accessor is inlined, the compiler turns that projection into a plain field load and
/// drops the key path: no key path object is made or reference-counted per property read, and no
/// table is searched. The slots are written into a new object's wrappers by
/// ``EntityDescription/_placeSlots(in:)`` from the object's initializer.
package protocol SlottedPropertyWrapper {
    /// The byte offset of `_slot` inside the wrapper.
    static var slotOffset: Int? { get }
    /// The slot this wrapper was given (-1: none).
    var slot: Int { get }
}

/// Where one wrapper of a class keeps its slot (a byte offset in the object) and the slot it
/// gets for an entity.
package struct SlotPlacement: Hashable, Sendable {
    var offset: Int
    var slot: Int
}

/// Where the objects of an entity keep their wrappers' slots, kept in the entity's
/// ``EntityDescription/objectClassData`` when the model loads.
final class SlotLayout {
    /// The placements for objects of the entity's class.
    // Invariant: allocated by `prepareSlotPlacements()`, owned by this layout, freed in `deinit`.
    let buffer: UnsafeBufferPointer<SlotPlacement>
    /// The same for objects of other classes (subclasses, probes), made on first use.
    let otherClassPlacements = LockedValue<[ObjectIdentifier: [SlotPlacement]]>([:])

    init(_ placements: [SlotPlacement]) {
        let buffer = UnsafeMutableBufferPointer<SlotPlacement>.allocate(capacity: placements.count)
        _ = buffer.initialize(from: placements)
        self.buffer = UnsafeBufferPointer(buffer)
    }

    deinit { buffer.deallocate() }
}

extension ManagedObject: EntityObjectClass {
    /// Places the slots of `entity`'s wrappers in objects of this class (see `SlotLayout`).
    package static func prepareObjects(of entity: EntityDescription) throws(ModelError) {
        try entity.prepareSlotPlacements()
    }
}

extension EntityDescription {
    /// The placements of the wrappers `type` declares (itself and its superclasses) for this
    /// entity's properties: wrapper storage `_name` gets the slot of property `name`, or -1 when
    /// the entity has no such property. Nil when the class's layout cannot be read.
    ///
    /// - Complexity: O(stored fields of `type`); done once per entity and class.
    func slotPlacements(for type: ManagedObject.Type) -> [SlotPlacement]? {
        var placements: [SlotPlacement] = []
        var readable = true
        // `.classType` (bit 0): offsets of a class instance's stored fields, superclasses included.
        let complete = _forEachField(of: type, options: _EachFieldOptions(rawValue: 1)) { cName, offset, fieldType, _ in
            guard let wrapper = fieldType as? any SlottedPropertyWrapper.Type else { return true }
            guard let inner = wrapper.slotOffset else {
                readable = false
                return false
            }
            let label = String(cString: cName)
            var slot = -1
            if label.hasPrefix("_"), let property = propertiesByName[String(label.dropFirst())] { slot = property.slot }
            guard Int16(exactly: slot) != nil else {  // a wrapper keeps its slot in two bytes
                readable = false
                return false
            }
            placements.append(SlotPlacement(offset: offset + inner, slot: slot))
            return true
        }
        return complete && readable ? placements : nil
    }

    /// Computes where this entity's class keeps its slots, and checks the result on a probe
    /// object: every wrapper must read back its property's slot. Called when the model loads.
    /// - Throws: ``ModelError/Code/classMismatch`` if the class's layout cannot be read.
    func prepareSlotPlacements() throws(ModelError) {
        let type = managedObjectClass
        guard type != ManagedObject.self else { return }
        guard let placements = slotPlacements(for: type) else {
            throw ModelError(
                .classMismatch, entity: name,
                "Coherence cannot read the stored fields of class '\(type)' to place its property wrappers.")
        }
        let layout = SlotLayout(placements)
        objectClassData = layout
        // Check: a probe's wrappers, seen through reflection, hold their properties' slots.
        let probe = type.init(entity: self)
        var mirror: Mirror? = Mirror(reflecting: probe)
        while let m = mirror {
            for child in m.children {
                guard let label = child.label, let wrapper = child.value as? any SlottedPropertyWrapper else { continue }
                let expected = label.hasPrefix("_") ? propertiesByName[String(label.dropFirst())]?.slot ?? -1 : -1
                guard wrapper.slot == expected else {
                    objectClassData = nil
                    throw ModelError(
                        .classMismatch, entity: name, property: String(label.dropFirst()),
                        "Coherence could not place the property wrapper '\(label)' of class '\(type)'.")
                }
            }
            mirror = m.superclassMirror
        }
    }

    /// Writes the slots of this entity's properties into the wrappers of `object`, a new object
    /// of this entity whose stored properties are all initialized.
    ///
    /// - Complexity: one store per wrapper when `object` is of the entity's class; the first
    ///   object of another class reads that class's layout once.
    @inline(__always)
    func _placeSlots(in object: ManagedObject) {
        if ObjectIdentifier(type(of: object)) == ObjectIdentifier(managedObjectClass) {
            guard let placements = (objectClassData as? SlotLayout)?.buffer else { return }
            // Invariant: `object` is exactly of `managedObjectClass`, whose wrapper fields sit at
            // these offsets (read from the runtime's field reflection, checked on a probe).
            let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
            for p in placements { base.storeBytes(of: Int16(truncatingIfNeeded: p.slot), toByteOffset: p.offset, as: Int16.self) }
        } else if !properties.isEmpty {
            _placeSlotsForOtherClass(in: object)
        }
    }

    /// Objects of a class other than the entity's (a subclass, or a probe): their layout is read
    /// once per class and kept.
    private func _placeSlotsForOtherClass(in object: ManagedObject) {
        let type = Swift.type(of: object)
        let key = ObjectIdentifier(type)
        let placements: [SlotPlacement]
        guard let layout = objectClassData as? SlotLayout else { return }
        if let known = layout.otherClassPlacements.withLock({ $0[key] }) {
            placements = known
        } else {
            placements = slotPlacements(for: type) ?? []
            layout.otherClassPlacements.withLock { $0[key] = placements }
        }
        // Invariant: `placements` were read from `object`'s own class (as above).
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        for p in placements { base.storeBytes(of: Int16(truncatingIfNeeded: p.slot), toByteOffset: p.offset, as: Int16.self) }
    }
}

extension Attribute: SlottedPropertyWrapper {
    package static var slotOffset: Int? { MemoryLayout<Self>.offset(of: \Self._slot) }
    package var slot: Int { Int(_slot) }
}

extension Relationship: SlottedPropertyWrapper {
    package static var slotOffset: Int? { MemoryLayout<Self>.offset(of: \Self._slot) }
    package var slot: Int { Int(_slot) }
}

extension Transformed: SlottedPropertyWrapper {
    package static var slotOffset: Int? { MemoryLayout<Self>.offset(of: \Self._slot) }
    package var slot: Int { Int(_slot) }
}

extension ManagedObject {
    /// The default value of the attribute at `slot`, for a typed read whose stored value does not
    /// convert (a null in a non-optional attribute).
    @usableFromInline @inline(never)
    package final func _attributeDefault<Value: PersistentValue>(at slot: Int, as type: Value.Type) -> Value? {
        guard slot < entity.properties.count, let a = entity.properties[slot] as? AttributeDescription,
            let stored = a.defaultValue
        else { return nil }
        return Value(storedValue: stored)
    }

    /// Stops on a typed property the object's entity does not have (its wrapper got no slot):
    /// the object was created with an entity that does not match its class.
    @usableFromInline @inline(never)
    package final func _unplacedProperty() -> Never {
        preconditionFailure(
            "An object of class '\(type(of: self))' was read through a property its entity '\(entity.name)' does not have: the object was created with an entity that does not match its class"
        )
    }

    /// For a property whose wrapper has no slot: returns when the object is one of the probes
    /// that reflecting a class makes (code the class runs on them, such as a `deinit` that reads
    /// a property, gets placeholders, and writes are dropped); stops otherwise
    /// (``_unplacedProperty()``).
    @usableFromInline @inline(never)
    package final func _allowUnplacedProperty() {
        if entity === ModelReflection.placeholderEntity { return }
        _unplacedProperty()
    }
}
