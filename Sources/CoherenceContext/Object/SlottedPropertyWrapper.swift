/// A property wrapper (``Attribute``, ``Relationship``, ``Transformed``) whose storage in an
/// object holds a number: the slot of its property in its class's slot template (see
/// `SlotPlan`), a recording token (-2, -3, …) while its class is reflected, and -1 in every
/// other object.
///
/// Typed accessors read the slot from the same wrapper of the object's slot template
/// (`template[keyPath: storage]._slot`). Once the accessor is inlined, the compiler turns that
/// projection into a plain field load and drops the key path: no key path object is made or
/// reference-counted per property read, and no table is searched.
@usableFromInline
protocol SlottedPropertyWrapper {
    /// See ``SlottedPropertyWrapper``.
    var _slot: Int16 { get }
}

extension SlottedPropertyWrapper {
    /// The number the wrapper holds (see ``_slot``).
    var slot: Int { Int(_slot) }
}

extension Attribute: SlottedPropertyWrapper {}
extension Relationship: SlottedPropertyWrapper {}
extension Transformed: SlottedPropertyWrapper {}
