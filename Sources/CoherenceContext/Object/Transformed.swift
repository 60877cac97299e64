import Foundation

/// Turns values of a transformable attribute into data and back, as Core Data's
/// `ValueTransformer`. Register one under the name an attribute's `valueTransformerName` uses;
/// attributes without a registered transformer store `Codable` values as JSON.
///
/// ```swift
/// struct CSV: AttributeTransformer {
///     func data(from value: Any) throws -> Data { Data(((value as? [String]) ?? []).joined(separator: ",").utf8) }
///     func value(from data: Data) throws -> Any { String(decoding: data, as: UTF8.self).split(separator: ",").map(String.init) }
/// }
/// AttributeTransformers.register(CSV(), forName: "CSVTransformer")
/// ```
public protocol AttributeTransformer: Sendable {
    /// Encodes a value for storage.
    func data(from value: Any) throws -> Data
    /// Decodes a stored value.
    func value(from data: Data) throws -> Any
}

/// The registry of named ``AttributeTransformer``s.
public enum AttributeTransformers {
    private static let registry = LockedValue<[String: any AttributeTransformer]>([:])

    /// Registers a transformer under `name` (replacing any earlier one).
    public static func register(_ transformer: any AttributeTransformer, forName name: String) {
        registry.withLock { $0[name] = transformer }
    }

    /// The transformer registered under `name`.
    public static func transformer(named name: String) -> (any AttributeTransformer)? {
        registry.withLock { $0[name] }
    }
}

extension ManagedObject {
    /// Decodes a transformable (or binary) attribute stored as JSON.
    /// - Throws: `.unknownKey`, or `.typeMismatch` when the data does not decode as `T`.
    public func decodedValue<T: Decodable>(forKey key: String, as type: T.Type = T.self) throws(CoherenceError) -> T? {
        guard let a = entity.attributesByName[key] else {
            throw CoherenceError(
                .unknownKey, "'\(key)' is not an attribute of entity '\(entity.name)'.", entity: entity.name, property: key)
        }
        guard case .blob(let data) = _storedValue(at: a.slot) else { return nil }
        do { return try TransformedCoding.decoder().decode(T.self, from: data) } catch {
            throw CoherenceError(
                .typeMismatch, "'\(key)' does not hold a JSON-encoded \(T.self): \(error)", entity: entity.name,
                property: key, objectID: _objectID)
        }
    }

    /// Encodes a value as JSON into a transformable (or binary) attribute.
    public func setEncodedValue<T: Encodable>(_ value: T?, forKey key: String) throws(CoherenceError) {
        guard let a = entity.attributesByName[key], a.type == .transformable || a.type == .binaryData else {
            throw CoherenceError(
                .unknownKey, "'\(key)' is not a transformable attribute of entity '\(entity.name)'.", entity: entity.name, property: key)
        }
        guard let value else { _setStoredValue(.null, at: a.slot); return }
        do { _setStoredValue(.blob(try TransformedCoding.encoder().encode(value)), at: a.slot) } catch {
            throw CoherenceError(.typeMismatch, "Cannot encode \(T.self) for '\(key)': \(error)", entity: entity.name, property: key)
        }
    }

    /// The stored form of a value for a transformable attribute: data as is, a registered
    /// transformer's data, or JSON for `Encodable` values.
    package static func transformedStoredValue(_ value: Any, for attribute: AttributeDescription) -> StoredValue? {
        if let d = value as? Data { return .blob(d) }
        if let name = attribute.valueTransformerName, let t = AttributeTransformers.transformer(named: name) {
            // A value the registered transformer rejects is a type mismatch: storing it as JSON
            // instead would give data the transformer cannot read back.
            return (try? t.data(from: value)).map { .blob($0) }
        }
        if let encodable = value as? any Encodable, let data = try? TransformedCoding.encoder().encode(encodable) { return .blob(data) }
        return nil
    }

    /// The value of a transformable attribute for the dynamic API: a registered transformer's
    /// value, else the data.
    static func transformedSwiftValue(_ v: StoredValue, for attribute: AttributeDescription) -> Any? {
        guard case .blob(let data) = v else { return nil }
        if let name = attribute.valueTransformerName, let t = AttributeTransformers.transformer(named: name),
            let value = try? t.value(from: data)
        {
            return value
        }
        return data
    }
}

/// Declares a transformable attribute on a typed subclass: any `Codable` value, stored as JSON
/// data.
///
/// ```swift
/// final class Note: ManagedObject {
///     @Transformed var tags: [String] = []
///     @Transformed var location: Coordinates?
/// }
/// ```
@propertyWrapper
public struct Transformed<Value: Codable> {
    /// The property's slot in the slot template of its class and entity; -1 in other objects
    /// (see `SlottedPropertyWrapper`).
    @usableFromInline var _slot: Int16 = -1
    @usableFromInline let defaultValue: Value?
    @usableFromInline let isTransient: Bool

    /// A transformable attribute whose default is the property's initial value.
    @inlinable
    public init(wrappedValue: Value, transient: Bool = false) {
        self.defaultValue = wrappedValue
        self.isTransient = transient
        if WrapperRecording.isActive { _slot = WrapperRecording.record(self) }
    }

    @available(*, unavailable, message: "@Transformed can only be used on ManagedObject subclasses")
    public var wrappedValue: Value {
        get { preconditionFailure("@Transformed can only be used on ManagedObject subclasses") }
        set { preconditionFailure("@Transformed can only be used on ManagedObject subclasses") }
    }

    /// Reads decode the stored JSON; writes encode it.
    public static subscript<EnclosingSelf: ManagedObject>(
        _enclosingInstance object: EnclosingSelf,
        wrapped wrappedKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Value>,
        storage storageKeyPath: ReferenceWritableKeyPath<EnclosingSelf, Transformed<Value>>
    ) -> Value {
        get {
            let fallback = object[keyPath: storageKeyPath].defaultValue
            let slot = ManagedObject._placedSlot(of: object, storage: storageKeyPath)
            if slot >= 0, case .blob(let data) = object._storedValue(at: slot),
                let v = try? TransformedCoding.decoder().decode(Value.self, from: data)
            {
                return v
            }
            if let fallback { return fallback }
            // Only optional Values reach here without a default: decode `null`.
            if let none = try? JSONDecoder().decode(Value.self, from: Data("null".utf8)) { return none }
            if slot < 0 { object._unplacedProperty() }
            preconditionFailure(
                "Property '\(object.entity.properties[slot].name)' of entity '\(object.entity.name)' holds no decodable value and has no default"
            )
        }
        set {
            let slot = ManagedObject._placedSlot(of: object, storage: storageKeyPath)
            if slot < 0 { return }
            let data: Data
            do { data = try TransformedCoding.encoder().encode(newValue) } catch {
                // A setter cannot throw: the value is not stored, the one before it is kept
                // (storing nil instead would lose both), and the error is logged.
                CoherenceLogging.log(
                    .error, "context",
                    "'\(object.entity.properties[slot].name)' of \(object.objectID) was not set: its value cannot be encoded as JSON: \(error)"
                )
                return
            }
            object._setStoredValue(.blob(data), at: slot)
        }
    }
}

extension Transformed: ReflectedProperty {
    @usableFromInline func makeDescription(name: String) -> PropertyDescription {
        let isOptional = Value.self is any OptionalProtocol.Type
        let stored: StoredValue? = defaultValue.flatMap { try? TransformedCoding.encoder().encode($0) }.map { .blob($0) }
        return AttributeDescription(
            name: name, type: .transformable, isOptional: isOptional, storedDefault: stored,
            isTransient: isTransient)
    }
    @usableFromInline var isUnique: Bool { false }
    @usableFromInline var isIndexed: Bool { false }
}
