import Foundation

/// What a merge did.
public struct MergeSummary: Sendable, Equatable, CustomStringConvertible {
    /// Objects inserted.
    public var inserted = 0
    /// Stored objects whose attributes changed.
    public var updated = 0
    /// Stored objects deleted.
    public var deleted = 0
    /// Whether the context was saved (only when something changed).
    public var saved = false
    public var description: String { "inserted \(inserted), updated \(updated), deleted \(deleted)\(saved ? ", saved" : "")" }
}

extension ActionContext {
    /// Merges incoming objects (for example a web service's JSON list) into the stored objects
    /// of an entity, matching them by the entity's uniqueness attributes:
    ///
    /// - same key: the stored object's attributes (minus `ignoreAttributes`) take the incoming
    ///   values, when `condition` holds for the stored object;
    /// - incoming only: a new object is inserted;
    /// - stored only (among those `subsetFilter` selects): the object is deleted, when
    ///   `condition` holds.
    ///
    /// The order of the input does not matter, and an empty input deletes everything in scope.
    /// Relationships are not merged. The context is saved only when something changed.
    ///
    /// ```swift
    /// try context.merge(objects: [["sku": "A-1", "name": "Lamp", "price": 19.99]], for: Product.self,
    ///                   subsetFilter: #Predicate { $0.price > 0 })
    /// ```
    ///
    /// - Complexity: one fetch and O(*n* log *n*) for *n* incoming plus stored objects.
    /// - Throws: ``ActionError`` `.unmanagedEntity` / `.missingEntityName` / `.invalidValue`
    ///   (an unknown attribute or a value of the wrong type: nothing is changed or saved), or
    ///   the save's error.
    @discardableResult
    public func merge<T: ManagedObject>(objects: [[String: Any]], for type: T.Type, ignoreAttributes: Set<String> = [],
                                        subsetFilter: Predicate<T>? = nil, condition: ((T) -> Bool)? = nil) throws -> MergeSummary {
        guard let entity = managedObjectModel.entity(for: T.self) else {
            throw ActionError.unmanagedEntity("Entity '\(T.entityName)' not managed, cannot merge objects.")
        }
        return try merge(objects: objects, entity: entity, ignoreAttributes: ignoreAttributes,
                         request: FetchRequest<T>(predicate: subsetFilter), condition: condition)
    }

    /// Merges incoming objects into an entity given by description (for models built in code);
    /// see ``merge(objects:for:ignoreAttributes:subsetFilter:condition:)``.
    @discardableResult
    public func merge(objects: [[String: Any]], for entity: EntityDescription, ignoreAttributes: Set<String> = [],
                      condition: ((ManagedObject) -> Bool)? = nil) throws -> MergeSummary {
        try merge(objects: objects, entity: entity, ignoreAttributes: ignoreAttributes,
                  request: FetchRequest<ManagedObject>(entityName: entity.name), condition: condition)
    }

    private func merge<T: ManagedObject>(objects: [[String: Any]], entity: EntityDescription, ignoreAttributes: Set<String>,
                                         request: FetchRequest<T>, condition: ((T) -> Bool)?) throws -> MergeSummary {
        guard !entity.name.isEmpty else {
            throw ActionError.missingEntityName("Entity does not have a name, cannot merge objects.")
        }
        guard let keyNames = uniquenessAttributes[entity.name] ?? ManagedEntities.uniquenessAttributes(of: entity),
              entity.managedObjectModel === managedObjectModel else {
            throw ActionError.unmanagedEntity("Entity '\(entity.name)' not managed, cannot merge objects.")
        }
        let keys = keyNames.compactMap { entity.attributesByName[$0] }
        let ignoredSlots = Set(ignoreAttributes.compactMap { entity.propertiesByName[$0]?.slot })
        // Validate and convert every incoming object before touching anything.
        var incoming: [(key: [StoredValue], values: [(Int, StoredValue)])] = []
        incoming.reserveCapacity(objects.count)
        for (index, object) in objects.enumerated() {
            var values: [(Int, StoredValue)] = []
            values.reserveCapacity(object.count)
            for (name, raw) in object {
                guard let attribute = entity.attributesByName[name] else { continue }   // relationships and extra keys are not merged
                guard let stored = ManagedObject.mergeValue(raw, for: attribute) else {
                    throw ActionError(.invalidValue, "Object \(index) of '\(entity.name)': '\(name)' has a value of type \(type(of: raw)), which is not a \(attribute.type).")
                }
                values.append((attribute.slot, stored))
            }
            var key: [StoredValue] = []
            for k in keys {
                guard let v = values.first(where: { $0.0 == k.slot })?.1, !v.isNull else {
                    throw ActionError(.invalidValue, "Object \(index) of '\(entity.name)' has no value for the uniqueness attribute '\(k.name)'.")
                }
                key.append(v)
            }
            incoming.append((key, ignoredSlots.isEmpty ? values : values.filter { slot, _ in !ignoredSlots.contains(slot) }))
        }
        return try performAndWait { () throws -> MergeSummary in
            var r = request
            r.returnsObjectsAsFaults = false
            r.includesSubentities = true
            let stored = try fetch(r)
            let order = { (a: [StoredValue], b: [StoredValue]) -> Int in ActionContext.compareKeys(a, b, keys) }
            let sortedIncoming = incoming.sorted { order($0.key, $1.key) < 0 }
            let storedKeyed = stored.map { o in (key: keys.map { o._storedValue(at: $0.slot) }, object: o) }
                .sorted { order($0.key, $1.key) < 0 }
            var summary = MergeSummary()
            var i = 0, s = 0
            func insert(_ item: (key: [StoredValue], values: [(Int, StoredValue)])) throws {
                let o = try insertNewObject(forEntityName: entity.name)
                for (slot, v) in item.values { o._setStoredValue(v, at: slot) }
                for (k, v) in zip(keys, item.key) { o._setStoredValue(v, at: k.slot) }
                summary.inserted += 1
            }
            while i < sortedIncoming.count || s < storedKeyed.count {
                let c: Int
                if i == sortedIncoming.count { c = 1 } else if s == storedKeyed.count { c = -1 } else {
                    c = order(sortedIncoming[i].key, storedKeyed[s].key)
                }
                if c < 0 {
                    // Incoming only. (A duplicate incoming key updates the object just inserted.)
                    if i > 0, order(sortedIncoming[i - 1].key, sortedIncoming[i].key) == 0 { i += 1; continue }
                    try insert(sortedIncoming[i])
                    i += 1
                } else if c > 0 {
                    let o = storedKeyed[s].object
                    if condition?(o) ?? true {
                        delete(o)
                        summary.deleted += 1
                    }
                    s += 1
                } else {
                    let o = storedKeyed[s].object
                    // Later duplicates of the same incoming key win.
                    var j = i
                    while j + 1 < sortedIncoming.count, order(sortedIncoming[j + 1].key, sortedIncoming[i].key) == 0 { j += 1 }
                    if condition?(o) ?? true {
                        let before = o._values
                        for (slot, v) in sortedIncoming[j].values { o._setStoredValue(v, at: slot) }
                        if o._values != before { summary.updated += 1 }
                    }
                    i = j + 1
                    s += 1
                }
            }
            if hasChanges {
                try save()
                summary.saved = true
            }
            return summary
        }
    }

    /// Orders keys the way stores order them (numbers numerically, text by bytes, decimals numerically).
    static func compareKeys(_ a: [StoredValue], _ b: [StoredValue], _ keys: [AttributeDescription]) -> Int {
        for (i, k) in keys.enumerated() {
            let c: Int
            if k.type == .decimal, case .text(let x) = a[i], case .text(let y) = b[i] {
                c = DecimalText.compare(x, y)
            } else {
                c = StoredValue.sqliteOrder(a[i], b[i])
            }
            if c != 0 { return c }
        }
        return 0
    }
}

extension ManagedObject {
    /// Converts an incoming (JSON-like) value for an attribute: Swift values, `NSNumber`s from
    /// `JSONSerialization`, and ISO-8601 strings for dates.
    static func mergeValue(_ value: Any, for attribute: AttributeDescription) -> StoredValue? {
        // Native Swift values first: casting them to NSNumber would box each one.
        switch (attribute.type.kind, value) {
        case (.string, let v as String): return .text(v)
        case (.integer64, let v as Int): return .integer(Int64(v))
        case (.double, let v as Double): return .real(v)
        case (.date, let v as Date): return v.storedValue
        default: break
        }
        if value is NSNull { return attribute.isOptional ? .null : nil }
        #if !canImport(Darwin)
        // JSON booleans are NSNumbers of type "c"; `is Bool` would also match the numbers 0 and 1.
        if let n = value as? NSNumber, String(cString: n.objCType) != "c" || attribute.type == .boolean {
            switch attribute.type.kind {
            case .integer16, .integer32, .integer64:
                let d = n.doubleValue
                guard d.rounded() == d, let i = Int64(exactly: d) ?? Int64(exactly: n.int64Value) else { return nil }
                return attribute.type.accepts(.integer(i)) ? .integer(i) : nil
            case .double, .float: return .real(n.doubleValue)
            case .boolean: return .integer(n.boolValue ? 1 : 0)
            case .decimal: return n.decimalValue.storedValue
            default: break
            }
        }
        #endif
        if attribute.type == .date, let text = value as? String {
            return ISO8601DateFormatter().date(from: text)?.storedValue
        }
        if attribute.type == .transformable { return transformedStoredValue(value, for: attribute) }
        return storedValue(value, for: attribute.type)
    }
}
