import Dispatch
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
    /// The counts, for example `inserted 2, updated 1, deleted 0, saved`.
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
    /// When several incoming objects have the same key they apply in input order (later values
    /// win). `condition` is asked only about stored objects the merge would change or delete;
    /// objects are made only for those (unchanged rows are compared as stored values).
    /// Relationships are not merged. The context is saved only when something changed.
    ///
    /// ```swift
    /// try context.merge(objects: [["sku": "A-1", "name": "Lamp", "price": 19.99]], for: Product.self,
    ///                   subsetFilter: #Predicate { $0.price > 0 })
    /// ```
    ///
    /// - Complexity: one fetch (of rows, not objects) and O(*n* log *n*) for *n* incoming plus
    ///   stored objects.
    /// - Throws: ``ActionError`` `.unmanagedEntity` / `.missingEntityName` / `.invalidValue`
    ///   (a value of the wrong type, a number the attribute cannot hold exactly, or a missing
    ///   key: nothing is changed or saved), or the save's error. Keys that name no attribute
    ///   (relationships, extra fields) are ignored.
    @discardableResult
    public func merge<T: ManagedObject>(
        objects: [[String: Any]], for type: T.Type, ignoreAttributes: Set<String> = [],
        subsetFilter: Predicate<T>? = nil, condition: ((T) -> Bool)? = nil
    ) throws -> MergeSummary {
        try merge(
            objects: objects, entity: try mergeEntity(T.self), ignoreAttributes: ignoreAttributes,
            request: FetchRequest<T>(predicate: subsetFilter), condition: condition)
    }

    /// Merges incoming objects whose values have any one type — typically `any Sendable`, as an
    /// action that keeps its payload must hold `Sendable` values — without converting the
    /// array to `[[String: Any]]` first (which would rebuild every dictionary); otherwise the
    /// same as ``merge(objects:for:ignoreAttributes:subsetFilter:condition:)-([[String:Any]],_,_,_,_)``.
    ///
    /// ```swift
    /// let payload: [[String: any Sendable]] = try decodeProducts(data)
    /// try context.merge(objects: payload, for: Product.self)
    /// ```
    @discardableResult
    public func merge<T: ManagedObject, Value: Sendable>(
        objects: [[String: Value]], for type: T.Type, ignoreAttributes: Set<String> = [],
        subsetFilter: Predicate<T>? = nil, condition: ((T) -> Bool)? = nil
    ) throws -> MergeSummary {
        try merge(
            objects: objects, entity: try mergeEntity(T.self), ignoreAttributes: ignoreAttributes,
            request: FetchRequest<T>(predicate: subsetFilter), condition: condition)
    }

    /// The entity of a typed subclass, or `.unmanagedEntity`.
    private func mergeEntity<T: ManagedObject>(_ type: T.Type) throws -> EntityDescription {
        guard let entity = managedObjectModel.entity(for: T.self) else {
            throw ActionError.unmanagedEntity("Entity '\(T.entityName)' not managed, cannot merge objects.")
        }
        return entity
    }

    /// Merges incoming objects whose values have any one type into an entity given by
    /// description; see ``merge(objects:for:ignoreAttributes:subsetFilter:condition:)-([[String:Any]],_,_,_,_)``.
    @discardableResult
    public func merge<Value: Sendable>(
        objects: [[String: Value]], for entity: EntityDescription, ignoreAttributes: Set<String> = [],
        condition: ((ManagedObject) -> Bool)? = nil
    ) throws -> MergeSummary {
        try merge(
            objects: objects, entity: entity, ignoreAttributes: ignoreAttributes,
            request: FetchRequest<ManagedObject>(entityName: entity.name), condition: condition)
    }

    /// Merges incoming objects into an entity given by description (for models built in code);
    /// see ``merge(objects:for:ignoreAttributes:subsetFilter:condition:)-([[String:Any]],_,_,_,_)``.
    @discardableResult
    public func merge(
        objects: [[String: Any]], for entity: EntityDescription, ignoreAttributes: Set<String> = [],
        condition: ((ManagedObject) -> Bool)? = nil
    ) throws -> MergeSummary {
        try merge(
            objects: objects, entity: entity, ignoreAttributes: ignoreAttributes,
            request: FetchRequest<ManagedObject>(entityName: entity.name), condition: condition)
    }

    private func merge<T: ManagedObject, Value>(
        objects: [[String: Value]], entity: EntityDescription, ignoreAttributes: Set<String>,
        request: FetchRequest<T>, condition: ((T) -> Bool)?
    ) throws -> MergeSummary {
        guard !entity.name.isEmpty else {
            throw ActionError.missingEntityName("Entity does not have a name, cannot merge objects.")
        }
        guard let keyNames = uniquenessAttributes[entity.name] ?? ManagedEntities.uniquenessAttributes(of: entity),
            entity.managedObjectModel === managedObjectModel
        else {
            throw ActionError.unmanagedEntity("Entity '\(entity.name)' not managed, cannot merge objects.")
        }
        let keys = keyNames.compactMap { entity.attributesByName[$0] }
        let ignoredSlots = Set(ignoreAttributes.compactMap { entity.propertiesByName[$0]?.slot })
        // Validate and convert every incoming object before touching anything.
        let incoming = try MergeInput(objects, entity: entity, keys: keys, ignoredSlots: ignoredSlots)
        return try performAndWait { () throws -> MergeSummary in
            var r = request
            r.includesSubentities = true
            let stored = try mergeCandidates(try r.storeFetch(in: managedObjectModel))
            let plan = MergePlan(incoming: incoming, stored: stored, keys: keys)
            var summary = MergeSummary()
            // Objects only for the stored rows that change or go, in one fetch group (so delete
            // rules and conditions that walk relationships load them for all in one query).
            var objects = [ManagedObject?](repeating: nil, count: stored.count)
            let group = FetchGroup()
            // Room in the change tracking for what follows (no rehashing while it grows).
            registered.reserveCapacity(registered.count + plan.operations.count)
            insertedList.reserveCapacity(insertedList.count + plan.inserts)
            pendingChanges.inserted.reserveCapacity(pendingChanges.inserted.count + plan.inserts)
            updatedCandidates.reserveCapacity(updatedCandidates.count + plan.updates)
            pendingChanges.updated.reserveCapacity(pendingChanges.updated.count + plan.updates)
            deletedList.reserveCapacity(deletedList.count + plan.deletes)
            deletedSet.reserveCapacity(deletedSet.count + plan.deletes)
            pendingChanges.deleted.reserveCapacity(pendingChanges.deleted.count + plan.deletes)
            for op in plan.operations {
                switch op {
                case .update(let s, _), .delete(let s):
                    if let o = stored.objects[s] {
                        objects[s] = o
                    } else if let snapshot = stored.snapshot(s) {
                        let o = materialize(snapshot, asFault: false, group: group)
                        objects[s] = o
                    }
                case .insert: break
                }
            }
            for o in group.objects { o.awakeFromFetch() }
            func holds(_ o: ManagedObject) -> Bool {
                guard let condition else { return true }
                guard let t = o as? T else { return false }
                return condition(t)
            }
            for op in plan.operations {
                switch op {
                case .insert(let range):
                    let o = try insertNewObject(forEntityName: entity.name)
                    for position in range {
                        for (slot, v) in incoming.values(of: plan.incomingOrder[position]) { o._setStoredValue(v, at: slot) }
                    }
                    for (k, v) in zip(keys, incoming.key(of: plan.incomingOrder[range.upperBound - 1])) { o._setStoredValue(v, at: k.slot) }
                    summary.inserted += 1
                case .update(let s, let range):
                    guard let o = objects[s], holds(o) else { continue }
                    let before = o._state.values
                    for position in range {
                        for (slot, v) in incoming.values(of: plan.incomingOrder[position]) { o._setStoredValue(v, at: slot) }
                    }
                    if o._state.values != before { summary.updated += 1 }
                case .delete(let s):
                    guard let o = objects[s], holds(o) else { continue }
                    delete(o)
                    summary.deleted += 1
                }
            }
            if hasChanges {
                try save()
                summary.saved = true
            }
            return summary
        }
    }

    /// The stored side of a merge: one fetch of rows, without making objects. Registered objects
    /// stand for their rows (with their current values; an unchanged one whose row another
    /// context saved since takes the row's values), and when the context has unsaved changes of
    /// the entity, the fetch goes through the objects (so it sees those changes).
    private func mergeCandidates(_ fetch: StoreFetch) throws(CoherenceError) -> MergeStored {
        if !pendingObjects(for: fetch).isEmpty {
            let objects = try fetchObjects(fetch, includesPendingChanges: true, asFaults: false, prefetching: [])
            // Unchanged objects loaded before another context saved their rows take the rows'
            // values, as below (one read of their rows).
            let unchanged = objects.filter { !$0.hasChanges && !$0._state.flags.contains(.fault) }
            if !unchanged.isEmpty {
                let snapshots = try source.sourceSnapshots(for: unchanged.map(\.objectID))
                for o in unchanged {
                    guard let snapshot = snapshots[o.objectID], snapshot.version != o._state.version else { continue }
                    o._install(snapshot, asFault: false)
                    pendingChanges.refreshed[ObjectIdentifier(o)] = o
                }
            }
            return MergeStored(objects: objects)
        }
        let start = DispatchTime.now().uptimeNanoseconds
        var stored: MergeStored
        if parent == nil, source === persistentStoreCoordinator {
            // Rows straight from the stores: snapshots are made only for the objects made later.
            // (A context pinned to a query generation reads through it, below.)
            stored = MergeStored(rows: try persistentStoreCoordinator.fetchRows(fetch))
        } else {
            stored = MergeStored(snapshots: try source.sourceFetch(fetch))
        }
        statistics.fetchTime += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        statistics.fetchedRows += stored.count
        if !registered.isEmpty {
            for i in 0..<stored.count {
                guard let id = stored.id(i), let o = registered[id] else { continue }
                if o._state.flags.contains(.fault) && !o._state.flags.contains(.prefilled) && !o.isInserted,
                    let snapshot = stored.snapshot(i)
                {
                    o._install(snapshot, asFault: false, keepRelations: true)
                    o.awakeFromFetch()
                } else {
                    o._willAccess()
                    // Filled before another context saved its row: it takes the row's values
                    // (it has no unsaved changes), so that an incoming value equal to its old
                    // one is still written, rather than the other context's value kept.
                    if !o.hasChanges && !o._state.flags.contains(.fault), let version = stored.version(i), version != o._state.version,
                        let snapshot = stored.snapshot(i)
                    {
                        o._install(snapshot, asFault: false)
                        pendingChanges.refreshed[ObjectIdentifier(o)] = o
                    }
                }
                stored.use(o, at: i)
            }
        }
        return stored
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
        // Native Swift values first: casting them to NSNumber would box each one. (Numbers only
        // when they are native: an `NSNumber` also casts to `Int` and `Double` on Linux, a JSON
        // boolean as 1 or 0 and an NSDecimalNumber past Int64's range as a wrong Int; the
        // `NSNumber` branch below converts them exactly or refuses them.)
        switch (attribute.type.kind, value) {
        case (.string, let v as String): return .text(v)
        case (.integer64, let v as Int) where type(of: value) == Int.self: return .integer(Int64(v))
        case (.double, let v as Double) where type(of: value) == Double.self: return v.storedValue
        case (.date, let v as Date): return v.storedValue
        default: break
        }
        // No value (JSON's null, or a Swift optional holding none): only an optional attribute
        // takes it (a required one would fail the save's validation after the merge changed
        // the context).
        if value is NSNull || (value as? any OptionalProtocol)?.isNone == true { return attribute.isOptional ? .null : nil }
        #if !canImport(Darwin)
        // JSON booleans are NSNumbers of type "c" (`is Bool` would also match the numbers 0 and
        // 1): a value of the wrong type for a numeric attribute, of every width alike.
        if let n = value as? NSNumber {
            let isBoolean = String(cString: n.objCType) == "c"
            switch attribute.type.kind {
            case .integer16, .integer32, .integer64:
                guard !isBoolean, let i = exactInteger(n) else { return nil }
                return attribute.type.accepts(.integer(i)) ? .integer(i) : nil
            case .double: return isBoolean ? nil : n.doubleValue.storedValue
            case .float: return isBoolean ? nil : floatStoredValue(n.doubleValue)
            case .boolean: return .integer(n.boolValue ? 1 : 0)
            case .decimal: return isBoolean ? nil : exactDecimal(n)?.storedValue
            default: break
            }
        }
        #endif
        if attribute.type == .date, let text = value as? String {
            return isoDate(text)?.storedValue
        }
        if attribute.type == .transformable { return transformedStoredValue(value, for: attribute) }
        return storedValue(value, for: attribute.type)
    }

    /// The date of an ISO-8601 date and time (`2024-01-02T03:04:05Z`, `…05.123+02:00`), with
    /// its fractional seconds to every digit (`ISO8601DateFormatter` refuses a fraction unless
    /// told to expect one, and then keeps only milliseconds); nil for anything else.
    static func isoDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        // A fraction of the seconds: `.` or `,` and digits after the time's seconds.
        let utf8 = Array(text.utf8)
        guard let t = utf8.firstIndex(of: UInt8(ascii: "T")),
            let mark = utf8[t...].firstIndex(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ",") })
        else { return nil }
        var end = mark + 1
        while end < utf8.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(utf8[end]) { end += 1 }
        guard end > mark + 1, let fraction = Double("0." + String(decoding: utf8[(mark + 1)..<end], as: UTF8.self)),
            let whole = formatter.date(from: String(decoding: utf8[..<mark] + utf8[end...], as: UTF8.self))
        else { return nil }
        return Date(timeIntervalSinceReferenceDate: whole.timeIntervalSinceReferenceDate + fraction)
    }

    #if !canImport(Darwin)
    /// The integer a number holds exactly, or nil: a floating-point or decimal number must be
    /// integral and in range, an unsigned one at most `Int64.max`. (Its `int64Value` wraps and
    /// saturates, and its `doubleValue` rounds integers past 2^53.)
    private static func exactInteger(_ n: NSNumber) -> Int64? {
        if n is NSDecimalNumber {
            let d = n.decimalValue
            return d.isFinite ? Int64(d.description) : nil
        }
        switch String(cString: n.objCType) {
        case "d", "f": return Int64(exactly: n.doubleValue)
        case "Q", "L": return Int64(exactly: n.uint64Value)
        default: return n.int64Value
        }
    }

    /// The decimal a number holds, or nil when a decimal cannot hold it: integers exactly, a
    /// floating-point number as its shortest decimal form (`0.1` is 0.1). (Its `decimalValue`
    /// goes through a `Double`, rounding integers past 2^53, and is NaN past a decimal's range.)
    private static func exactDecimal(_ n: NSNumber) -> Decimal? {
        if n is NSDecimalNumber { return n.decimalValue }
        switch String(cString: n.objCType) {
        case "d", "f":
            let d = n.doubleValue
            let text = String(cString: n.objCType) == "f" ? String(n.floatValue) : String(d)
            guard d.isFinite, let decimal = DecimalText.parse(text), decimal.isFinite else { return nil }
            return decimal
        case "Q", "L": return Decimal(n.uint64Value)
        default: return Decimal(n.int64Value)
        }
    }
    #endif
}
