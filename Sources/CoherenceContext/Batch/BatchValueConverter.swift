import Foundation

/// Turns the Swift values of a batch request's dictionaries into stored values of an entity's
/// attributes, checking each key and type. The usual types are converted without the dynamic
/// API's general casts, since a batch insert converts every value of every row.
struct BatchValueConverter {
    let entity: EntityDescription
    /// The request, as errors name it: "Batch insert into 'Person'".
    let request: String
    /// The entity's stored attributes, in slot order, and their names.
    private let attributes: [AttributeDescription]
    private let names: [String]

    init(entity: EntityDescription, request: String) {
        self.entity = entity
        self.request = request
        self.attributes = entity.attributes.filter { !$0.isTransient }
        self.names = attributes.map(\.name)
    }

    /// The stored attribute a key names.
    /// - Throws: `.unknownKey` for a key that is not a stored attribute of the entity.
    func attribute(_ key: String, row: Int?) throws(CoherenceError) -> AttributeDescription {
        var hint = 0
        return try attribute(key, row: row, hint: &hint)
    }

    /// The stored attribute a key names, looked for from `hint` on (then from the start) and
    /// leaving `hint` after it. Names are compared rather than hashed: an entity has few
    /// attributes, and comparing two short names costs less than hashing one.
    @inline(__always)
    private func attribute(_ key: String, row: Int?, hint: inout Int) throws(CoherenceError) -> AttributeDescription {
        let n = names.count
        var i = hint < n ? hint : 0
        for _ in 0..<n {
            let found = names[i] == key
            let next = i + 1 == n ? 0 : i + 1
            if found {
                hint = next
                return attributes[i]
            }
            i = next
        }
        throw unknownKey(key, row: row)
    }

    /// `.unknownKey` for a key that is not a stored attribute of the entity.
    private func unknownKey(_ key: String, row: Int?) -> CoherenceError {
        let what: String
        if entity.relationshipsByName[key] != nil {
            what = "'\(key)' is a relationship; batch requests set attributes only"
        } else if entity.attributesByName[key] != nil {
            what = "'\(key)' is a transient attribute, which is not stored"
        } else {
            what = "'\(key)' is not an attribute of entity '\(entity.name)'"
        }
        return CoherenceError(.unknownKey, "\(prefix(row)): \(what).", entity: entity.name, property: key)
    }

    /// The stored form of `value` for `attribute`.
    /// - Throws: `.typeMismatch` naming the entity, the attribute and the value's type.
    func stored(_ value: any Sendable, for attribute: AttributeDescription, row: Int?) throws(CoherenceError) -> StoredValue {
        if let v = Self.stored(value, for: attribute) { return v }
        throw CoherenceError(
            .typeMismatch,
            "\(prefix(row)): a value of type \(type(of: value)) cannot be stored in '\(attribute.name)' (\(attribute.type)).",
            entity: entity.name, property: attribute.name)
    }

    /// Puts a dictionary's values into `values` (by slot).
    func fill(_ values: inout [StoredValue], from dictionary: [String: any Sendable], row: Int) throws(CoherenceError) {
        var hint = 0
        for (key, value) in dictionary {
            let a = try attribute(key, row: row, hint: &hint)
            values[a.slot] = try stored(value, for: a, row: row)
        }
    }

    private func prefix(_ row: Int?) -> String { row.map { "\(request), row \($0)" } ?? request }

    /// The stored form of a value, or nil when its type does not fit the attribute.
    static func stored(_ value: any Sendable, for attribute: AttributeDescription) -> StoredValue? {
        // The common types first, by exact casts.
        switch attribute.type.kind {
        case .integer64: if let i = value as? Int { return .integer(Int64(i)) }
        case .string: if let s = value as? String { return .text(s) }
        case .double: if let d = value as? Double { return StoredValue(double: d) }
        case .date: if let d = value as? Date { return d.storedValue }
        case .boolean: if let b = value as? Bool { return b.storedValue }
        default: break
        }
        // JSONSerialization's nil, and an Optional's.
        if value is NSNull { return .null }
        if let optional = value as? any OptionalProtocol, optional.isNone { return .null }
        if attribute.type == .transformable { return ManagedObject.transformedStoredValue(value, for: attribute) }
        return ManagedObject.storedValue(value, for: attribute.type)
    }
}
