import Foundation

/// An object of the object graph, as Core Data's `NSManagedObject`.
///
/// Subclass it and declare the schema with ``Attribute`` and ``Relationship``:
///
/// ```swift
/// final class Person: ManagedObject {
///     @Attribute var name: String = ""
///     @Attribute(.unique) var email: String = ""
///     @Attribute var age: Int = 0
///     @Relationship(inverse: "people") var town: Town?
/// }
/// ```
///
/// or use `ManagedObject` itself with a model built in code and the dynamic
/// ``value(forKey:)`` / ``setValue(_:forKey:)`` accessors.
///
/// Managed objects are not `Sendable`: an object belongs to one context and is used on that
/// context's executor. Pass ``objectID`` between threads instead.
open class ManagedObject: Hashable, CustomStringConvertible {
    // Field order: what a typed accessor reads (the slot template, then the values and flags at
    // the start of `_state`) comes first, in the object's first 48 bytes, so that reading a
    // property of an object not in the processor's cache loads one cache line of it, not three.
    /// The slot template of the object's class and entity: an object of exactly this class whose
    /// wrappers hold their properties' slots, which typed accessors read (see `SlotPlan`); nil on
    /// probes and when the class has no template (accessors then take their exact path).
    /// Unretained, so that reading it costs no reference counting.
    // Invariant: set only by `init(entity:)` (to `entity.slotTemplate(for:)`) and
    // `_becomeProbe(_:)` (to nil); the template is kept alive by the entity's slot plans, which
    // the object keeps alive through `entity`.
    @exclusivity(unchecked) @usableFromInline package final var _slotTemplate: UnretainedReference<AnyObject>?
    /// The object's entity (an object keeps it alive).
    public let entity: EntityDescription
    // The mutable fields below are confined to the object's context executor (checked in debug
    // builds); `@exclusivity(unchecked)` drops the run-time exclusivity bookkeeping Swift would
    // otherwise do on every access of a class property (13 % of an insert-heavy save).
    /// The object's values, committed snapshot, flags, relationship state, row version and
    /// committed to-one destinations, changed only through the operations of ``ObjectState``.
    @exclusivity(unchecked) @usableFromInline package final var _state: ObjectState
    @exclusivity(unchecked) package final var _objectID: ObjectID?
    /// Non-nil only on probe objects used to resolve key paths.
    @exclusivity(unchecked) @usableFromInline package final var _probe: KeyPathProbe.Recorder?
    /// The context the object is registered in, through the context's shared handle (cleared
    /// when the context goes away): cheaper than a weak reference per object, and just as safe.
    /// A strong reference kept unmanaged (set through ``_contextHandle``, which retains it;
    /// released in `deinit`), so that the hot paths that call the context through it
    /// (``_hasLiveContext``, ``_belongs(to:)``, noting a change) borrow it without a retain.
    @exclusivity(unchecked) @usableFromInline package final var _handleReference: Unmanaged<ContextHandle>?
    /// The context's handle (see ``_handleReference``).
    @usableFromInline package final var _contextHandle: ContextHandle? {
        @inline(__always) get { _handleReference?.takeUnretainedValue() }
        set {
            let old = _handleReference
            _handleReference = newValue.map { Unmanaged.passRetained($0) }
            old?.release()
        }
    }
    /// Whether the object is registered in a context that still exists (no reference counting
    /// of the context or its handle).
    @inline(__always) package final var _hasLiveContext: Bool {
        _handleReference?._withUnsafeGuaranteedRef { $0.isAlive } ?? false
    }
    /// Whether the object is registered in `context` (no reference counting of the context).
    @inline(__always) package final func _belongs(to context: ManagedObjectContext) -> Bool {
        guard let handle = _handleReference, handle.toOpaque() == Unmanaged.passUnretained(context.handle).toOpaque() else {
            return false
        }
        return handle._withUnsafeGuaranteedRef { $0.isAlive }
    }
    /// The context the object is registered in (nil once the context is gone).
    @usableFromInline package final var _context: ManagedObjectContext? {
        @inline(__always) get { _contextHandle?.context }
        @inline(__always) set { _contextHandle = newValue?.handle }
    }
    /// The committed destination of a foreign-key relationship: the stored one when set,
    /// otherwise the object the committed foreign-key slot names (in the object's store).
    @inline(__always)
    package final func _committedToOneID(_ r: RelationshipDescription) -> ObjectID? {
        _state.committedToOneID(r, objectID: _objectID)
    }
    /// The object's place among its context's updated candidates, valid while
    /// `_candidateEpoch` is the candidates' epoch (see `OrderedObjects`).
    @exclusivity(unchecked) package final var _candidatePosition: UInt32 = 0
    @exclusivity(unchecked) package final var _candidateEpoch: UInt32 = 0
    /// The object's place in `_group`. (Not in the padding after `_state`: an object of the
    /// size it had before its state became one field is allocated from the size class its
    /// value array uses too, which the fetch benchmark showed to be worth 3 %: heap memory
    /// freed by one fetch's objects is reused by the next one's values and objects alike.)
    @exclusivity(unchecked) package final var _groupIndex: UInt32 = 0
    /// The fetch result this object came with (for batched relationship loading). Set through
    /// `FetchGroup.add(_:)`, cleared through ``_leaveGroup()``: the group's entry for the object
    /// must go when the object leaves or is deallocated. A strong reference kept unmanaged, as
    /// ``_handleReference``, and released in `deinit` or ``_leaveGroup()``.
    @exclusivity(unchecked) package final var _groupReference: Unmanaged<FetchGroup>?
    /// The object's fetch group (see ``_groupReference``).
    package final var _group: FetchGroup? { _groupReference?.takeUnretainedValue() }

    /// Creates an object of `entity` with the entity's default values, not yet in any context.
    /// Insert it with ``ManagedObjectContext/insert(_:)``, or use ``init(context:)``.
    ///
    /// Subclasses inherit this initializer; if a subclass declares its own designated
    /// initializer it must also provide this one.
    public required init(entity: EntityDescription) {
        // What the entity gives first, then the entity itself stored last (its last use): read
        // after the store, it would be retained and released around the reads.
        let values = entity.initialValues
        let template = entity.slotTemplate(for: Self.self)
        self.entity = entity
        self._state = ObjectState(values: values)
        self._slotTemplate = template
    }

    deinit {
        // Still in a group only if the context is gone (see `FetchGroup`): members deallocated
        // then may clear their entries on several threads at once.
        if let group = _groupReference {
            group._withUnsafeGuaranteedRef { $0.removeMemberOfAGoneContext(at: _groupIndex) }
            _groupReference = nil
            group.release()
        }
        _handleReference?.release()
    }

    /// Leaves the object's fetch group, if any. On the context's executor.
    @inline(__always)
    package final func _leaveGroup() {
        guard let group = _groupReference else { return }
        let index = _groupIndex
        group._withUnsafeGuaranteedRef { $0.removeMember(at: index) }
        _groupReference = nil
        group.release()
    }

    // MARK: Overridable entity information for typed subclasses

    /// The entity name used when Coherence reflects this class (default: the class name).
    open class var entityName: String { String(describing: self) }
    /// Whether the entity reflected from this class is abstract. Override for the abstract class
    /// only: `override class var isAbstractEntity: Bool { self == Shape.self }`.
    open class var isAbstractEntity: Bool { false }
    /// Uniqueness constraints of the reflected entity (attribute names).
    open class var uniquenessConstraints: [[String]] { [] }
    /// Indexes of the reflected entity (property names).
    open class var indexes: [[String]] { [] }
    /// The `userInfo` of the reflected entity.
    open class var entityUserInfo: [String: any Sendable] { [:] }
    /// Whether persistent history keeps the old and new values of every attribute an update
    /// changes, for the reflected entity (``EntityDescription/recordsValuesInHistory``).
    open class var recordsValuesInHistory: Bool { false }

    // MARK: Lifecycle hooks

    /// Called once when the object is inserted into a context. Set initial values here.
    open func awakeFromInsert() {}
    /// Called when a fetched object's values are first filled in.
    open func awakeFromFetch() {}
    /// Called before the object is saved (inserted, updated or deleted). Changes made here are saved.
    open func willSave() {}
    /// Called after the object was saved.
    open func didSave() {}
    /// Called when the object is about to be deleted, before delete rules apply.
    open func prepareForDeletion() {}
    /// Validates an inserted object at save; throw to refuse the save.
    open func validateForInsert() throws {}
    /// Validates an updated object at save; throw to refuse the save.
    open func validateForUpdate() throws {}
    /// Validates a deleted object at save; throw to refuse the save.
    open func validateForDelete() throws {}

    // MARK: Identity

    /// The object's ID: temporary until the object is saved.
    public var objectID: ObjectID {
        if let id = _objectID { return id }
        let id = ObjectID.temporary(for: entity)
        _objectID = id
        return id
    }

    /// Whether both are the same object (identity, as in Core Data: compare ``objectID``s to compare rows).
    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    /// Hashes the object's identity, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// The hash `Set` and `Dictionary` use: the object's address mixed with the table's seed
    /// (a few multiplications instead of a full `Hasher` round; saves build sets of thousands of
    /// objects for their notifications).
    public func _rawHashValue(seed: Int) -> Int {
        ObjectID.mix(Int64(Int(bitPattern: UInt(bitPattern: ObjectIdentifier(self)))), seed: seed)
    }

    /// The entity, the object ID and the attribute values (or `fault`), for diagnostics; does not
    /// fire the fault.
    open var description: String {
        if _state.flags.contains(.fault) { return "<\(entity.name) \(objectID) fault>" }
        let props = entity.attributes.map { a -> String in "\(a.name)=\(_state.values[a.slot])" }
        return "<\(entity.name) \(objectID) \(props.joined(separator: " "))>"
    }

    // MARK: Raw value access

    /// The stored value at a property slot (fires the fault first).
    @inlinable @inline(__always)
    package final func _storedValue(at slot: Int) -> StoredValue {
        _willAccess()
        return _state.values[slot]
    }

    /// Sets the stored value at a property slot. Setting the value a property already has does
    /// not mark the object changed.
    @inlinable @inline(__always)
    package final func _setStoredValue(_ value: StoredValue, at slot: Int) {
        _willAccess()
        // (The values of an object whose data could not be loaded are not its row's: every
        // write there is an edit.)
        if _state.flags.contains(.loadFailed) {
            _noteUnloadedEdit(at: slot)
        } else if _state.values[slot] == value {
            return
        }
        _state.setValue(value, at: slot)
        _didChange()
    }

    /// Before a value of an object whose data could not be loaded changes: the context keeps
    /// the edited slots, to apply them over the row once it loads.
    @usableFromInline
    package final func _noteUnloadedEdit(at slot: Int) {
        _ = _handleReference?._withUnsafeGuaranteedRef { $0.withContext { $0._noteUnloadedEdit(self, slot: slot) } }
    }

    /// Checks the executor (debug builds) and fires the fault.
    @inlinable @inline(__always)
    package final func _willAccess() {
        #if DEBUG
        if let context = _context { context.assertOnExecutor(touching: self) }
        #endif
        if _state.flags.contains(.fault) { _fireFault() }
    }

    /// Tells the context the object changed.
    @usableFromInline
    package final func _didChange() {
        // Inserted and deleted objects are tracked already; check the flags before loading the
        // (weak) context reference.
        if _state.flags.contains(.inserted) || _state.flags.contains(.deleted) { return }
        _ = _handleReference?._withUnsafeGuaranteedRef { $0.withContext { $0._noteUpdated(self) } }
    }

    // MARK: Dynamic access

    /// The value of a property by name: an attribute as its Swift type (`Int` for 64-bit
    /// integers, `Int16`, `Int32`, `Double`, `Float`, `Bool`, `String`, `Data`, `Date`, `UUID`,
    /// `URL`, `Decimal`) or `nil`; a to-one relationship as its destination `ManagedObject` or
    /// `nil`; a to-many relationship as `[ManagedObject]` (in order for an ordered one), as Core
    /// Data's `value(forKey:)` gives the object, set or ordered set.
    ///
    /// ```swift
    /// let name = try student.value(forKey: "name") as? String
    /// let school = try student.value(forKey: "school") as? ManagedObject
    /// ```
    /// - Throws: ``CoherenceError`` `.unknownKey` when the entity has no such property.
    public func value(forKey key: String) throws(CoherenceError) -> Any? {
        guard let property = entity.propertiesByName[key] else {
            throw CoherenceError(
                .unknownKey, "'\(key)' is not a property of entity '\(entity.name)'.",
                entity: entity.name, property: key, objectID: _objectID)
        }
        guard let attribute = property as? AttributeDescription else {
            guard let relationship = property as? RelationshipDescription else { return nil }
            return _dynamicValue(of: relationship)
        }
        if attribute.type == .transformable {
            return Self.transformedSwiftValue(_storedValue(at: attribute.slot), for: attribute)
        }
        return Self.swiftValue(_storedValue(at: attribute.slot), type: attribute.type)
    }

    /// The value of an attribute by name, decoded as `T`.
    /// - Throws: `.unknownKey`, or `.typeMismatch` when the value is not a `T`.
    public func value<T: PersistentValue>(forKey key: String, as type: T.Type = T.self) throws(CoherenceError) -> T {
        guard let attribute = entity.attributesByName[key] else {
            throw CoherenceError(
                .unknownKey, "'\(key)' is not an attribute of entity '\(entity.name)'.",
                entity: entity.name, property: key, objectID: _objectID)
        }
        let stored = _storedValue(at: attribute.slot)
        guard let value = T(storedValue: stored) else {
            throw CoherenceError(
                .typeMismatch, "'\(key)' holds \(stored.kindName), which is not a \(T.self).",
                entity: entity.name, property: key, objectID: _objectID)
        }
        return value
    }

    /// Sets a property by name, checking the value's type: an attribute's Swift value, a
    /// to-one relationship's destination (`ManagedObject` or `nil`), or a to-many
    /// relationship's destinations (`[ManagedObject]`, `Set<ManagedObject>`, or `nil` for
    /// none). Relationships keep their inverses in step, as the typed properties do.
    ///
    /// ```swift
    /// try student.setValue("Ada", forKey: "name")
    /// try student.setValue(school, forKey: "school")      // also adds student to school.students
    /// ```
    /// - Throws: `.unknownKey` for a key that is not a property, `.typeMismatch` for a value of
    ///   the wrong type (an object of another entity included), `.contextMismatch` for a
    ///   destination in another context. `nil` is accepted for any attribute; a non-optional one
    ///   that is still nil is reported at save by validation, as in Core Data.
    public func setValue(_ value: Any?, forKey key: String) throws(CoherenceError) {
        guard let property = entity.propertiesByName[key] else {
            throw CoherenceError(
                .unknownKey, "'\(key)' is not a property of entity '\(entity.name)'.",
                entity: entity.name, property: key, objectID: _objectID)
        }
        guard let attribute = property as? AttributeDescription else {
            guard let relationship = property as? RelationshipDescription else { return }
            try _setDynamicValue(value, of: relationship)
            return
        }
        let converted =
            attribute.type == .transformable && value != nil
            ? value.flatMap { Self.transformedStoredValue($0, for: attribute) } : Self.storedValue(value, for: attribute.type)
        guard let stored = converted else {
            throw CoherenceError(
                .typeMismatch,
                "A value of type \(value.map { "\(type(of: $0))" } ?? "nil") cannot be stored in '\(key)' (\(attribute.type)).",
                entity: entity.name, property: key, objectID: _objectID)
        }
        _setStoredValue(stored, at: attribute.slot)
    }

    /// Converts a stored value to the Swift type used by the dynamic API.
    static func swiftValue(_ v: StoredValue, type: AttributeType) -> (any Sendable)? {
        if case .null = v { return nil }
        switch type.kind {
        case .integer16: return Int16(storedValue: v)
        case .integer32: return Int32(storedValue: v)
        case .integer64: return Int(storedValue: v)
        case .double: return Double(storedValue: v)
        case .float: return Float(storedValue: v)
        case .boolean: return Bool(storedValue: v)
        case .string: return String(storedValue: v)
        case .binaryData, .transformable: return Data(storedValue: v)
        case .date: return Date(storedValue: v)
        case .uuid: return UUID(storedValue: v)
        case .uri: return URL(storedValue: v)
        case .decimal: return Decimal(storedValue: v)
        }
    }

    /// The stored form of a `Float` attribute set to `value`: the `Float` nearest to it, as the
    /// typed property would store it (so that predicates, uniqueness and merges compare it with
    /// the values the property reads and writes); nil for a finite value past `Float`'s range.
    package static func floatStoredValue(_ value: Double) -> StoredValue? {
        let single = Float(value)
        guard single.isFinite || !value.isFinite else { return nil }
        return single.storedValue
    }

    /// Converts a Swift value to the stored form of `type`, or nil when the type does not fit.
    package static func storedValue(_ value: Any?, for type: AttributeType) -> StoredValue? {
        guard let value else { return .null }
        if let opt = value as? any OptionalProtocol, opt.isNone { return .null }
        let stored: StoredValue
        switch type.kind {
        case .integer16, .integer32, .integer64:
            guard let i = value as? any BinaryInteger, let v = Int64(exactly: i) else { return nil }
            stored = .integer(v)
        case .boolean:
            guard let b = value as? Bool else { return nil }
            stored = b.storedValue
        case .double, .float:
            let double: Double
            if let d = value as? Double {
                double = d
            } else if let f = value as? Float {
                return f.storedValue
            } else if let i = value as? any BinaryInteger, let d = Double(exactly: i) {
                double = d
            } else {
                return nil
            }
            if type.kind == .float { return floatStoredValue(double) }
            stored = double.storedValue
        case .string:
            guard let s = value as? String else { return nil }
            stored = .text(s)
        case .binaryData, .transformable:
            guard let d = value as? Data else { return nil }
            stored = .blob(d)
        case .date:
            guard let d = value as? Date else { return nil }
            stored = d.storedValue
        case .uuid:
            guard let u = value as? UUID else { return nil }
            stored = u.storedValue
        case .uri:
            guard let u = value as? URL else { return nil }
            stored = u.storedValue
        case .decimal:
            if let d = value as? Decimal {
                stored = d.storedValue
            } else if let i = value as? any BinaryInteger, let v = Int64(exactly: i) {
                stored = Decimal(v).storedValue
            } else {
                return nil
            }
        }
        return type.accepts(stored) ? stored : nil
    }
}

@available(*, unavailable, message: "Managed objects belong to one context; pass their objectID between threads")
extension ManagedObject: Sendable {}

/// Lets `Any` values that hold an `Optional` be recognized.
protocol OptionalProtocol { var isNone: Bool { get } }
extension Optional: OptionalProtocol {
    var isNone: Bool { if case .none = self { return true } else { return false } }
}
