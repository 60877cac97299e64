import Foundation

/// Options for an ``Attribute``.
public struct AttributeOptions: OptionSet, Hashable, Sendable {
    /// The options' bits.
    public let rawValue: Int
    /// Creates options from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Kept in memory only, never stored.
    public static let transient = AttributeOptions(rawValue: 1 << 0)
    /// Values must be unique among all objects of the entity (a one-attribute uniqueness constraint).
    public static let unique = AttributeOptions(rawValue: 1 << 1)
    /// Indexed in the store.
    public static let indexed = AttributeOptions(rawValue: 1 << 2)
    /// Kept in persistent history when an object is deleted, in the delete's tombstone
    /// (``AttributeDescription/preservesValueInHistoryOnDeletion``).
    public static let preservesValueInHistoryOnDeletion = AttributeOptions(rawValue: 1 << 3)
    /// Old and new values kept in persistent history when an update changes the attribute
    /// (``AttributeDescription/recordsValuesInHistory``).
    public static let recordsValuesInHistory = AttributeOptions(rawValue: 1 << 4)
}

/// Declares an attribute on a typed ``ManagedObject`` subclass.
///
/// The property's name becomes the attribute's name, its Swift type the attribute's type, an
/// initial value its default, and an optional type an optional attribute:
///
/// ```swift
/// final class Person: ManagedObject {
///     @Attribute var name: String = ""
///     @Attribute(.unique) var email: String = ""
///     @Attribute(validation: .init(minimum: 0, maximum: 150)) var age: Int = 0
///     @Attribute var nickname: String?
///     @Attribute(.transient) var scratch: Int = 0
/// }
/// ```
@propertyWrapper
public struct Attribute<Value: PersistentValue> {
    /// The property's slot in the slot template of its class and entity; -1 in other objects
    /// (see `SlottedPropertyWrapper`). This is all a wrapper keeps in each object: options,
    /// default and rules are read once, when the class is reflected (see `WrapperRecording`),
    /// and live in the model. Two bytes: one per wrapper in every object.
    @usableFromInline var _slot: Int16 = -1

    /// An attribute with no default value (optional types default to nil).
    @inlinable
    public init(_ options: AttributeOptions = []) {
        if WrapperRecording.isActive {
            _slot = WrapperRecording.record(AttributeDeclaration<Value>(options: options, defaultValue: nil, validation: nil))
        }
    }

    /// An attribute with no default value (optional types default to nil) and validation rules.
    @inlinable
    public init(_ options: AttributeOptions = [], validation: AttributeValidation) {
        if WrapperRecording.isActive {
            _slot = WrapperRecording.record(AttributeDeclaration<Value>(options: options, defaultValue: nil, validation: validation))
        }
    }

    /// An attribute whose default value is the property's initial value.
    @inlinable
    public init(wrappedValue: Value, _ options: AttributeOptions = []) {
        if WrapperRecording.isActive {
            _slot = WrapperRecording.record(AttributeDeclaration(options: options, defaultValue: wrappedValue, validation: nil))
        }
    }

    /// An attribute whose default value is the property's initial value, with validation rules.
    @inlinable
    public init(wrappedValue: Value, _ options: AttributeOptions = [], validation: AttributeValidation) {
        if WrapperRecording.isActive {
            _slot = WrapperRecording.record(AttributeDeclaration(options: options, defaultValue: wrappedValue, validation: validation))
        }
    }

    @available(*, unavailable, message: "@Attribute can only be used on ManagedObject subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("@Attribute can only be used on ManagedObject subclasses") }
        // swiftlint:disable:next unused_setter_value
        set { preconditionFailure("@Attribute can only be used on ManagedObject subclasses") }
    }

    /// Reads and writes go to the object's value storage.
    ///
    /// The slot comes from the same wrapper in the object's slot template. Inlined, the projection
    /// through `storageKeyPath` becomes a field load and the key paths are never made: a read
    /// costs two loads, two checks and the value's conversion.
    @inlinable
    public static subscript<EnclosingSelf: ManagedObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Attribute<Value>>
    ) -> Value {
        @inline(__always) get {
            let slot = ManagedObject._placedSlot(of: object, storage: storageKeyPath)
            if slot < 0 { return Value.placeholder }
            return Value(storedValue: object._storedValue(at: slot)) ?? object._attributeDefault(at: slot, as: Value.self)
                ?? Value.placeholder
        }
        @inline(__always) set {
            let slot = ManagedObject._placedSlot(of: object, storage: storageKeyPath)
            if slot < 0 { return }
            object._setStoredValue(newValue.storedValue, at: slot)
        }
    }
}

/// What an ``Attribute`` declaration says, recorded when its class is reflected.
@usableFromInline
struct AttributeDeclaration<Value: PersistentValue>: ReflectedProperty {
    let options: AttributeOptions
    let defaultValue: Value?
    let validation: AttributeValidation?

    @usableFromInline
    init(options: AttributeOptions, defaultValue: Value?, validation: AttributeValidation?) {
        self.options = options
        self.defaultValue = defaultValue
        self.validation = validation
    }

    @usableFromInline func makeDescription(name: String) -> PropertyDescription {
        AttributeDescription(
            name: name, type: Value.attributeType, isOptional: Value.isOptionalType,
            storedDefault: defaultValue.map { $0.storedValue }.flatMap { $0.isNull ? nil : $0 },
            isTransient: options.contains(.transient), validation: validation ?? .none,
            preservesValueInHistoryOnDeletion: options.contains(.preservesValueInHistoryOnDeletion),
            recordsValuesInHistory: options.contains(.recordsValuesInHistory))
    }
    @usableFromInline var isUnique: Bool { options.contains(.unique) }
    @usableFromInline var isIndexed: Bool { options.contains(.indexed) }
}

/// What a property wrapper's declaration says about its property (options, default, rules).
@usableFromInline
protocol ReflectedProperty {
    func makeDescription(name: String) -> PropertyDescription
    var isUnique: Bool { get }
    var isIndexed: Bool { get }
}
