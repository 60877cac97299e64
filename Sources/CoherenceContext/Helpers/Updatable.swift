import Foundation

/// Change-aware setters for typed managed objects (RCDataKit's `Updatable`): each writes only
/// when the new value differs, and returns whether it wrote. An unchanged call never marks the
/// object changed.
///
/// ```swift
/// extension Person: Updatable {}
///
/// person.update(\.name, value: "Ada")                      // false when it already was "Ada"
/// person.updateIfAvailable(\.email, value: json.email)     // nil: no write, false
/// person.update(\.score, value: 9.51, minimumChange: 0.1)  // within 0.1 of the current value: false
/// person.add(\.clubs, relation: chess)                     // false when already a member
/// ```
public protocol Updatable: ManagedObject {}

extension Updatable {
    /// Sets the property to `value` unless it already holds it. A non-optional attribute whose
    /// stored value is nil (a row written without it) counts as different. Values compare as the
    /// store keeps them: floating-point values bit for bit (NaN holds NaN, −0.0 is not 0.0), dates
    /// by their instant, text by its UTF-8 bytes, URLs by their absolute string.
    /// - Returns: whether it wrote.
    @discardableResult
    public func update<V: Equatable>(_ keyPath: ReferenceWritableKeyPath<Self, V>, value: V) -> Bool {
        if UpdatableValues.same(self[keyPath: keyPath], value) && !storesNilForNonOptional(keyPath) { return false }
        self[keyPath: keyPath] = value
        return true
    }

    /// Sets the property to `value` when `value` is not nil and differs.
    /// - Returns: whether it wrote (false for nil).
    @discardableResult
    public func updateIfAvailable<V: Equatable>(_ keyPath: ReferenceWritableKeyPath<Self, V>, value: V?) -> Bool {
        guard let value else { return false }
        return update(keyPath, value: value)
    }

    /// Sets the optional property to `value` when `value` is not nil and differs.
    /// - Returns: whether it wrote (false for nil).
    @discardableResult
    public func updateIfAvailable<V: Equatable>(_ keyPath: ReferenceWritableKeyPath<Self, V?>, value: V?) -> Bool {
        guard let value else { return false }
        return update(keyPath, value: Optional(value))
    }

    /// Sets the integer property to `value` unless `value` lies within `minimumChange` of the
    /// current value (the closed range current ± `minimumChange`).
    /// - Returns: whether it wrote.
    @discardableResult
    public func update<V: FixedWidthInteger>(_ keyPath: ReferenceWritableKeyPath<Self, V>, value: V, minimumChange: V) -> Bool {
        let current = self[keyPath: keyPath]
        let (distance, overflow) =
            value >= current ? value.subtractingReportingOverflow(current) : current.subtractingReportingOverflow(value)
        if !overflow && distance <= minimumChange && !storesNilForNonOptional(keyPath) { return false }
        self[keyPath: keyPath] = value
        return true
    }

    /// Sets the floating-point property to `value` unless `value` lies within `minimumChange` of
    /// the current value (the closed range current ± `minimumChange`) or is that value bit for
    /// bit (NaN over NaN, infinity over the same infinity).
    /// - Returns: whether it wrote.
    @discardableResult
    public func update<V: BinaryFloatingPoint>(_ keyPath: ReferenceWritableKeyPath<Self, V>, value: V, minimumChange: V) -> Bool {
        let current = self[keyPath: keyPath]
        if UpdatableValues.identical(value, current) || (value - current).magnitude <= minimumChange,
            !storesNilForNonOptional(keyPath)
        {
            return false
        }
        self[keyPath: keyPath] = value
        return true
    }

    /// The integer `update(_:value:minimumChange:)` when `value` is not nil.
    /// - Returns: whether it wrote (false for nil).
    @discardableResult
    public func updateIfAvailable<V: FixedWidthInteger>(_ keyPath: ReferenceWritableKeyPath<Self, V>, value: V?, minimumChange: V) -> Bool {
        guard let value else { return false }
        return update(keyPath, value: value, minimumChange: minimumChange)
    }

    /// The floating-point `update(_:value:minimumChange:)` when `value` is not nil.
    /// - Returns: whether it wrote (false for nil).
    @discardableResult
    public func updateIfAvailable<V: BinaryFloatingPoint>(_ keyPath: ReferenceWritableKeyPath<Self, V>, value: V?, minimumChange: V)
        -> Bool
    {
        guard let value else { return false }
        return update(keyPath, value: value, minimumChange: minimumChange)
    }

    // MARK: To-one relationships

    /// Sets the to-one relationship to `object` unless it already holds it (as
    /// ``update(_:value:)`` does; the inverse follows).
    /// - Returns: whether it wrote.
    @discardableResult
    public func add<R: ManagedObject>(_ keyPath: ReferenceWritableKeyPath<Self, R?>, relation object: R?) -> Bool {
        guard let object, self[keyPath: keyPath] !== object else { return false }
        self[keyPath: keyPath] = object
        return true
    }

    /// Clears the to-one relationship when it holds `object`.
    /// - Returns: whether it cleared it.
    @discardableResult
    public func remove<R: ManagedObject>(_ keyPath: ReferenceWritableKeyPath<Self, R?>, relation object: R?) -> Bool {
        guard let object, self[keyPath: keyPath] === object else { return false }
        self[keyPath: keyPath] = nil
        return true
    }

    // MARK: To-many relationships

    /// Adds `object` to the to-many relationship unless it is already there.
    /// - Returns: whether it added it.
    @discardableResult
    public func add<R: ManagedObject>(_ keyPath: ReferenceWritableKeyPath<Self, Set<R>>, relation object: R) -> Bool {
        var related = self[keyPath: keyPath]
        guard related.insert(object).inserted else { return false }
        self[keyPath: keyPath] = related
        return true
    }

    /// Adds `object`, when not nil, to the to-many relationship unless it is already there.
    /// - Returns: whether it added it (false for nil).
    @discardableResult
    public func add<R: ManagedObject>(_ keyPath: ReferenceWritableKeyPath<Self, Set<R>>, relation object: R?) -> Bool {
        guard let object else { return false }
        return add(keyPath, relation: object)
    }

    /// Adds `objects` to the to-many relationship (it becomes the union).
    /// - Returns: whether at least one was not there yet.
    @discardableResult
    public func add<R: ManagedObject, C: Collection<R>>(_ keyPath: ReferenceWritableKeyPath<Self, Set<R>>, relation objects: C) -> Bool {
        let related = self[keyPath: keyPath]
        let union = related.union(objects)
        guard union.count > related.count else { return false }
        self[keyPath: keyPath] = union
        return true
    }

    /// Removes `object` from the to-many relationship when it is there.
    /// - Returns: whether it removed it.
    @discardableResult
    public func remove<R: ManagedObject>(_ keyPath: ReferenceWritableKeyPath<Self, Set<R>>, relation object: R) -> Bool {
        var related = self[keyPath: keyPath]
        guard related.remove(object) != nil else { return false }
        self[keyPath: keyPath] = related
        return true
    }

    /// Removes `object`, when not nil, from the to-many relationship when it is there.
    /// - Returns: whether it removed it (false for nil).
    @discardableResult
    public func remove<R: ManagedObject>(_ keyPath: ReferenceWritableKeyPath<Self, Set<R>>, relation object: R?) -> Bool {
        guard let object else { return false }
        return remove(keyPath, relation: object)
    }

    /// Removes `objects` from the to-many relationship.
    /// - Returns: whether at least one was there.
    @discardableResult
    public func remove<R: ManagedObject, C: Collection<R>>(_ keyPath: ReferenceWritableKeyPath<Self, Set<R>>, relation objects: C) -> Bool {
        let related = self[keyPath: keyPath]
        let rest = related.subtracting(objects)
        guard rest.count < related.count else { return false }
        self[keyPath: keyPath] = rest
        return true
    }

    /// Whether the key path reads a non-optional attribute whose stored value is nil (its
    /// getter then returns the default, which must not count as "unchanged").
    private func storesNilForNonOptional<V>(_ keyPath: KeyPath<Self, V>) -> Bool {
        guard !(V.self is any AnyOptional.Type), let attribute = entity.property(forKeyPath: keyPath) as? AttributeDescription,
            attribute.slot >= 0, attribute.slot < _state.values.count
        else { return false }
        return _storedValue(at: attribute.slot).isNull
    }
}
