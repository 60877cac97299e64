import Foundation

/// Runs a batch request on one store, inside the store's open write transaction, through the
/// store's ``BatchWriter``: the rules every store follows are written here once.
///
/// - Inserts: each row is checked (required attributes, validation rules) and written at
///   version 1; a row a uniqueness constraint refuses fails the request, or updates or keeps
///   the stored row it collides with (``StoreBatchRequest/UniquenessResolution``).
/// - Updates: the values are checked once, then written to every matching row, whose version
///   moves on by one (so a context holding one of those objects meets a version conflict when
///   it saves it).
/// - Deletes: delete rules that need no object are applied to every deleted row, the rows that
///   cascade rules reach included: cascade deletes the destinations, nullify clears the
///   destinations' foreign keys (their versions move on) and join-table rows go, deny fails
///   the request when a destination is not deleted too.
///
/// Any error leaves the transaction to be rolled back by the caller: a request changes all it
/// says or nothing.
package struct BatchExecutor<Writer: BatchWriter> {
    package var writer: Writer
    /// The first ID made in the writer's store, from which the others are made (without
    /// converting the store's UUID again per row).
    private var storeTemplate: ObjectID?
    /// Concrete entities by number, per root entity (filled on first use).
    private var entitiesByNumber: [ObjectIdentifier: [Int: EntityDescription]] = [:]
    /// With history: which values of each entity its history keeps — in a delete's tombstone, as
    /// an update's old and new values (nil without history).
    private var history: HistoryBuilder?
    /// The tombstones of the rows deleted so far (with history, of entities that keep some).
    private var tombstones: [ObjectID: [SlotValue]] = [:]

    package init(writer: Writer) {
        self.writer = writer
        if writer.recordsChanges { history = HistoryBuilder() }
    }

    /// Runs `request` and hands its changes to the writer's history hook, as one transaction
    /// under `author` and `contextName` (those of the context that executes the request).
    package mutating func run(
        _ request: StoreBatchRequest, author: String? = nil, contextName: String? = nil
    ) throws(CoherenceError) -> StoreBatchResult {
        let result: StoreBatchResult
        switch request {
        case .insert(let insert): result = try self.insert(insert)
        case .update(let update): result = try self.update(update)
        case .delete(let delete): result = try self.delete(delete)
        }
        // ─── Persistent history ─────────────────────────────────────────────────────────────
        // The one place a batch request's changes are recorded: `result.changes` lists every row
        // the request changed (inserts; updates with the names of the properties they changed
        // and the values history keeps; deletes, those of delete rules included, with their
        // tombstones), once per object, and the store's write transaction is still open, so what
        // is recorded here commits or rolls back with the data.
        if history != nil {
            try writer.record(HistoryTransactionRecord(batch: result.changes, author: author, contextName: contextName))
        }
        return result
    }

    // MARK: IDs

    /// The ID of row `key` of entity number `number` in `root`'s table.
    private mutating func objectID(_ root: EntityDescription, _ number: Int, _ key: Int64) throws(CoherenceError) -> ObjectID {
        let entity: EntityDescription
        if root.entityNumber == number {
            entity = root
        } else {
            let rootKey = ObjectIdentifier(root)
            if entitiesByNumber[rootKey] == nil {
                var map: [Int: EntityDescription] = [:]
                for e in SQLGenerator.hierarchy(of: root) { map[e.entityNumber] = e }
                entitiesByNumber[rootKey] = map
            }
            guard let e = entitiesByNumber[rootKey]?[number] else {
                throw CoherenceError(
                    .corruptRow, "Row \(key) of '\(root.name)' has entity number \(number), which is not in this hierarchy.",
                    entity: root.name, store: writer.storeLocation)
            }
            entity = e
        }
        return objectID(entity, key)
    }

    /// The ID of row `key` of `entity` (its concrete entity) in the writer's store.
    private mutating func objectID(_ entity: EntityDescription, _ key: Int64) -> ObjectID {
        if let storeTemplate { return storeTemplate.inSameStore(entity: entity, primaryKey: key) }
        let id = ObjectID(entity: entity, storeIdentifier: writer.storeIdentifier, primaryKey: key)
        storeTemplate = id
        return id
    }

    // MARK: Validation

    /// Throws `.validation` for a required attribute that is nil or a value that breaks its
    /// attribute's rules.
    private func validate(_ values: [StoredValue], of entity: EntityDescription, row: Int) throws(CoherenceError) {
        for slot in entity.requiredAttributeSlots where values[slot].isNull {
            let name = entity.properties[slot].name
            throw CoherenceError(
                .validation, "Batch insert into '\(entity.name)', row \(row): \(entity.name).\(name) is required.",
                entity: entity.name, property: name, store: writer.storeLocation)
        }
        for a in entity.ruledAttributes {
            let v = values[a.slot]
            guard !v.isNull, let failure = a.ruleViolations(v).first else { continue }
            throw CoherenceError(
                .validation, "Batch insert into '\(entity.name)', row \(row): \(entity.name).\(a.name) \(failure).",
                entity: entity.name, property: a.name, store: writer.storeLocation)
        }
    }

    // MARK: Insert

    private mutating func insert(_ request: StoreBatchRequest.Insert) throws(CoherenceError) -> StoreBatchResult {
        let entity = request.entity
        guard !entity.isAbstract else {
            throw CoherenceError(
                .invalidRequest, "Entity '\(entity.name)' is abstract; a batch insert needs a concrete entity.",
                entity: entity.name, store: writer.storeLocation)
        }
        let root = entity.rootEntity
        let initial = entity.initialValues
        var result = StoreBatchResult()
        let lists = request.listsRows || writer.recordsChanges
        if let n = request.rowCount, lists {
            result.objectIDs.reserveCapacity(n)
            result.changes.reserveCapacity(n)
        }
        var values = initial
        var nextKey: Int64 = 0
        var keysLeft = 0
        var row = 0
        var metStoredRows = false
        // Rows not written yet, when the writer inserts several at once.
        let chunk = Swift.max(writer.insertChunkSize(entity), 1)
        var pending: [(key: Int64, values: [StoredValue])] = []
        if chunk > 1 { pending.reserveCapacity(chunk) }
        while true {
            if row > 0 {
                // Back to the initial values in place (no new array per row).
                for slot in values.indices { values[slot] = initial[slot] }
            }
            do throws(CoherenceError) {
                guard try request.nextRow(&values) else { break }
                guard values.count == initial.count else {
                    throw CoherenceError(
                        .invalidRequest,
                        "Batch insert into '\(entity.name)', row \(row): the row has \(values.count) values, not \(initial.count).",
                        entity: entity.name, store: writer.storeLocation)
                }
                try validate(values, of: entity, row: row)
            } catch {
                // The rows before this one meet their own errors first, as they would row by row.
                try writePending(&pending, entity, firstRow: row - pending.count, request, lists, &result, &metStoredRows)
                throw error
            }
            if keysLeft == 0 {
                // All the rows' keys at once when their number is known; else in growing blocks.
                let count = request.rowCount.map { Swift.max($0 - row, 1) } ?? Swift.min(Swift.max(row, 256), 65_536)
                nextKey = try writer.allocateKeys(for: root, count: count)
                keysLeft = count
            }
            let key = nextKey
            nextKey += 1
            keysLeft -= 1
            if chunk > 1 {
                pending.append((key, values))
                if pending.count == chunk {
                    try writePending(&pending, entity, firstRow: row + 1 - chunk, request, lists, &result, &metStoredRows)
                }
            } else {
                try insertRow(entity, key: key, values: values, row: row, request, lists, &result, &metStoredRows)
            }
            row += 1
        }
        try writePending(&pending, entity, firstRow: row - pending.count, request, lists, &result, &metStoredRows)
        result.count = row
        // A row that updated a stored row may have updated one this request inserted or
        // updated before: history lists each object once.
        if metStoredRows { result.changes = Self.coalesced(result.changes) }
        return result
    }

    /// Inserts one row of a batch insert; a row a uniqueness constraint refuses is resolved as
    /// the request says.
    private mutating func insertRow(
        _ entity: EntityDescription, key: Int64, values: [StoredValue], row: Int, _ request: StoreBatchRequest.Insert,
        _ lists: Bool, _ result: inout StoreBatchResult, _ metStoredRows: inout Bool
    ) throws(CoherenceError) {
        if try writer.insertRow(entity, key: key, values: values) {
            if lists {
                let id = objectID(entity, key)
                result.objectIDs.append(id)
                result.changes.append(BatchChange(objectID: id, kind: .insert))
            }
        } else {
            try resolveUniqueness(of: values, entity: entity, row: row, request.uniquenessConflicts, lists: lists, into: &result)
            metStoredRows = true
        }
    }

    /// Writes the rows a batch insert holds back (`firstRow` is the first one's number) with one
    /// ``BatchWriter/insertRows(_:_:)``; when a uniqueness constraint refuses any of them, nothing
    /// of that was written and they go row by row instead, so that every rule and error is that
    /// of inserting row by row.
    private mutating func writePending(
        _ pending: inout [(key: Int64, values: [StoredValue])], _ entity: EntityDescription, firstRow: Int,
        _ request: StoreBatchRequest.Insert, _ lists: Bool, _ result: inout StoreBatchResult, _ metStoredRows: inout Bool
    ) throws(CoherenceError) {
        guard !pending.isEmpty else { return }
        defer { pending.removeAll(keepingCapacity: true) }
        if pending.count > 1, try writer.insertRows(entity, pending) {
            if lists {
                for p in pending {
                    let id = objectID(entity, p.key)
                    result.objectIDs.append(id)
                    result.changes.append(BatchChange(objectID: id, kind: .insert))
                }
            }
            return
        }
        for (i, p) in pending.enumerated() {
            try insertRow(entity, key: p.key, values: p.values, row: firstRow + i, request, lists, &result, &metStoredRows)
        }
    }

    /// A row a uniqueness constraint refused: fails, or updates or keeps the one stored row it
    /// collides with. (An update is always listed: the coordinator drops the row from its cache.)
    private mutating func resolveUniqueness(
        of values: [StoredValue], entity: EntityDescription, row: Int,
        _ resolution: StoreBatchRequest.UniquenessResolution, lists: Bool, into result: inout StoreBatchResult
    ) throws(CoherenceError) {
        let matches = try writer.uniquenessMatches(entity, values: values)
        var stored: [ObjectID] = []
        for m in matches { for id in m.rows where !stored.contains(id) { stored.append(id) } }
        if resolution != .fail, stored.count == 1, let existing = stored.first, existing.entity === entity {
            if resolution == .updateExisting {
                guard let current = try writer.row(existing) else {
                    throw uniquenessError(entity, values, row: row, matches)
                }
                let changed = entity.storedProperties.compactMap { p -> AttributeDescription? in
                    guard let a = p as? AttributeDescription, current.values[a.slot] != values[a.slot] else { return nil }
                    return a
                }
                if !changed.isEmpty {
                    let written = try writer.updateRows(
                        entity, keys: [existing.primaryKey], properties: changed, values: changed.map { values[$0.slot] })
                    // The new values collide with yet another stored row.
                    guard written else {
                        throw uniquenessError(entity, values, row: row, try writer.uniquenessMatches(entity, values: values))
                    }
                    var change = BatchChange(objectID: existing, kind: .update, updatedProperties: changed.map(\.name))
                    change.values = recordedSlots(of: entity, changed).map {
                        HistoryValueChange(
                            slot: $0.slot, old: current.values.indices.contains($0.slot) ? current.values[$0.slot] : .null,
                            new: values[$0.slot])
                    }
                    result.changes.append(change)
                }
            }
            if lists { result.objectIDs.append(existing) }
            return
        }
        throw uniquenessError(entity, values, row: row, matches)
    }

    /// `.conflict` for an inserted row that collides with stored rows, naming the entity, the
    /// constraint, the values and the rows.
    private func uniquenessError(
        _ entity: EntityDescription, _ values: [StoredValue], row: Int, _ matches: [(constraint: [String], rows: [ObjectID])]
    ) -> CoherenceError {
        let prefix = "Batch insert into '\(entity.name)', row \(row)"
        guard let first = matches.first(where: { !$0.rows.isEmpty }) else {
            return CoherenceError(
                .conflict, "\(prefix): a uniqueness constraint refused the row, but no stored row holds its values.",
                entity: entity.name, store: writer.storeLocation)
        }
        let shown = first.constraint.map { name in
            "\(name) = \(entity.propertiesByName[name].map { values[$0.slot].description } ?? "?")"
        }
        let others = matches.flatMap(\.rows)
        var error = CoherenceError(
            .conflict,
            "\(prefix): \(shown.joined(separator: ", ")) is already used by \(first.rows.map(\.description).joined(separator: ", ")) (uniqueness constraint [\(first.constraint.joined(separator: ", "))]).",
            entity: entity.name, property: first.constraint.first, store: writer.storeLocation)
        error.conflicts = [
            SaveConflict(
                kind: .uniqueness, objectID: ObjectID.temporary(for: entity), objectValues: values, cachedValues: nil,
                persistedValues: nil, oldVersion: 0, newVersion: 0, constraint: first.constraint, conflictingObjectIDs: others)
        ]
        return error
    }

    // MARK: Update

    private mutating func update(_ request: StoreBatchRequest.Update) throws(CoherenceError) -> StoreBatchResult {
        let entity = request.fetch.entity
        for (a, v) in zip(request.attributes, request.values) {
            if v.isNull && !a.isOptional {
                throw CoherenceError(
                    .validation, "Batch update of '\(entity.name)': \(entity.name).\(a.name) is required and cannot be set to nil.",
                    entity: entity.name, property: a.name, store: writer.storeLocation)
            }
            if !v.isNull, let failure = a.ruleViolations(v).first {
                throw CoherenceError(
                    .validation, "Batch update of '\(entity.name)': \(entity.name).\(a.name) \(failure).",
                    entity: entity.name, property: a.name, store: writer.storeLocation)
            }
        }
        let keys = try writer.keys(matching: request.fetch, foreignKeys: []).keys
        var result = StoreBatchResult()
        guard !keys.isEmpty, !request.attributes.isEmpty else { return result }
        let root = entity.rootEntity
        result.objectIDs.reserveCapacity(keys.count)
        for (key, number) in keys { result.objectIDs.append(try objectID(root, number, key)) }
        // With history, the values before the update of the attributes whose history keeps them.
        var recorded: [ObjectIdentifier: [(slot: Int, index: Int)]] = [:]
        var old: [ObjectID: [StoredValue]] = [:]
        if history != nil {
            for id in result.objectIDs where recorded[ObjectIdentifier(id.entity)] == nil {
                recorded[ObjectIdentifier(id.entity)] = recordedSlots(of: id.entity, request.attributes)
            }
            if recorded.values.contains(where: { !$0.isEmpty }) {
                old = try writer.storedValues(of: result.objectIDs.filter { recorded[ObjectIdentifier($0.entity)]?.isEmpty == false })
            }
        }
        let written = try writer.updateRows(
            entity, keys: keys.map(\.primaryKey), properties: request.attributes, values: request.values)
        guard written else { throw updateUniquenessError(request, rows: keys.count) }
        let names = request.attributes.map(\.name)
        result.count = keys.count
        result.changes.reserveCapacity(keys.count)
        for id in result.objectIDs {
            var change = BatchChange(objectID: id, kind: .update, updatedProperties: names)
            if let slots = recorded[ObjectIdentifier(id.entity)], let before = old[id] {
                change.values = slots.map {
                    HistoryValueChange(
                        slot: $0.slot, old: before.indices.contains($0.slot) ? before[$0.slot] : .null, new: request.values[$0.index])
                }
            }
            result.changes.append(change)
        }
        return result
    }

    /// With history, the slots in `entity` of those of `attributes` whose old and new values its
    /// history records, each with the attribute's index in `attributes`; empty without history.
    private mutating func recordedSlots(of entity: EntityDescription, _ attributes: [AttributeDescription]) -> [(slot: Int, index: Int)] {
        guard var builder = history else { return [] }
        defer { history = builder }
        let layout = builder.layout(of: entity)
        guard layout.hasRecordedValues else { return [] }
        var slots: [(slot: Int, index: Int)] = []
        for (index, a) in attributes.enumerated() {
            guard let slot = entity.propertiesByName[a.name]?.slot, slot < layout.recordsValues.count, layout.recordsValues[slot]
            else { continue }
            slots.append((slot, index))
        }
        return slots
    }

    /// `.conflict` for an update a uniqueness constraint refused.
    private func updateUniquenessError(_ request: StoreBatchRequest.Update, rows: Int) -> CoherenceError {
        let entity = request.fetch.entity
        let set = Set(request.attributes.map(\.name))
        var constraints: [[String]] = []
        var e: EntityDescription? = entity
        while let x = e {
            constraints += x.uniquenessConstraints.filter { !set.isDisjoint(with: $0) }
            e = x.superentity
        }
        let shown = zip(request.attributes, request.values).map { "\($0.name) = \($1)" }.joined(separator: ", ")
        let constraint = constraints.first ?? []
        return CoherenceError(
            .conflict,
            "Batch update of '\(entity.name)' sets \(shown) on \(rows) row(s), which uniqueness constraint [\(constraint.joined(separator: ", "))] refuses: another row holds these values, or several rows would.",
            entity: entity.name, property: constraint.first { set.contains($0) }, store: writer.storeLocation)
    }

    // MARK: Delete

    /// The rows a delete removes, in the order they were found, and (built when first asked)
    /// their keys by root table.
    private struct Deletion {
        private(set) var ids: [ObjectID] = []
        private var keys: [ObjectIdentifier: Set<Int64>] = [:]
        /// The number of `ids` in `keys`.
        private var indexed = 0

        /// Puts the rows added by ``add(new:)`` in the key sets.
        mutating func index() {
            while indexed < ids.count {
                let id = ids[indexed]
                keys[ObjectIdentifier(id.entity.rootEntity), default: []].insert(id.primaryKey)
                indexed += 1
            }
        }

        /// Adds a row; false when it was already there.
        mutating func add(_ id: ObjectID) -> Bool {
            index()
            guard keys[ObjectIdentifier(id.entity.rootEntity), default: []].insert(id.primaryKey).inserted else { return false }
            ids.append(id)
            indexed += 1
            return true
        }

        /// Adds rows known not to be there yet (the rows a fetch matched).
        mutating func add(new rows: [ObjectID]) {
            ids += rows
        }

        /// Whether a row is deleted (call ``index()`` after ``add(new:)`` first).
        func contains(_ id: ObjectID) -> Bool {
            keys[ObjectIdentifier(id.entity.rootEntity)]?.contains(id.primaryKey) ?? false
        }
    }

    /// What delete rules found, applied once every deleted row is known.
    private struct RuleEffects {
        var denied: [(relationship: RelationshipDescription, source: ObjectID, destination: ObjectID)] = []
        /// Destinations whose rows hold a foreign key to a deleted row.
        var nullified: [(relationship: RelationshipDescription, destination: ObjectID)] = []
    }

    /// Whether a relationship's delete rule needs the destinations: cascade, deny, and nullify
    /// where the destination's row holds the foreign key (to clear). A nullified destination that
    /// only loses the deleted object from a to-many relationship, or from a to-one kept on the
    /// deleted side, has nothing stored to change.
    private static func followsDestinations(_ r: RelationshipDescription) -> Bool {
        guard !r.isTransient else { return false }
        switch r.deleteRule.kind {
        case .cascade, .deny: return true
        case .nullify: return r.inverseRelationship?.hasForeignKey ?? false
        case .noAction: return false
        }
    }

    /// IDs grouped by concrete entity, in the order each entity first appears.
    private static func byEntity(_ ids: [ObjectID]) -> [(entity: EntityDescription, keys: [Int64])] {
        // Usually one entity (no table to hash into).
        if let first = ids.first?.entity, ids.allSatisfy({ $0.entity === first }) { return [(first, ids.map(\.primaryKey))] }
        var index: [ObjectIdentifier: Int] = [:]
        var groups: [(entity: EntityDescription, keys: [Int64])] = []
        for id in ids {
            let key = ObjectIdentifier(id.entity)
            if let i = index[key] {
                groups[i].keys.append(id.primaryKey)
            } else {
                index[key] = groups.count
                groups.append((id.entity, [id.primaryKey]))
            }
        }
        return groups
    }

    /// The to-one relationships kept in `root`'s table whose delete rules need their
    /// destinations.
    private static func foreignKeysToFollow(in root: EntityDescription) -> [RelationshipDescription] {
        var result: [RelationshipDescription] = []
        for e in SQLGenerator.hierarchy(of: root) {
            for r in e.relationships where r.hasForeignKey && followsDestinations(r) {
                if !result.contains(where: { $0 === r }) { result.append(r) }
            }
        }
        return result
    }

    /// Whether a join-table relationship of `root`'s hierarchy has a delete rule that reads the
    /// destinations (they must be read before the rows go: SQLite removes join rows with them).
    private static func followsJoinRows(_ root: EntityDescription) -> Bool {
        SQLGenerator.hierarchy(of: root).contains { e in
            e.relationships.contains { r in
                guard case .joinTable = r.storage else { return false }
                return followsDestinations(r)
            }
        }
    }

    private mutating func delete(_ request: StoreBatchRequest.Delete) throws(CoherenceError) -> StoreBatchResult {
        var deletion = Deletion()
        var effects = RuleEffects()
        // The rows the request names, and rows found and not deleted yet.
        var targets: [ObjectID] = []
        var pending: [ObjectID] = []
        if let fetch = request.fetch {
            let root = fetch.entity.rootEntity
            if Self.followsJoinRows(root) {
                for (key, number) in try writer.keys(matching: fetch, foreignKeys: []).keys {
                    let id = try objectID(root, number, key)
                    if deletion.add(id) { pending.append(id) }
                }
            } else {
                // The keys (and foreign keys whose rules need them) are read, then the rows
                // deleted by the fetch's own predicate, before anything else changes.
                let foreignKeys = Self.foreignKeysToFollow(in: root)
                let found = try writer.keys(matching: fetch, foreignKeys: foreignKeys)
                targets.reserveCapacity(found.keys.count)
                for (key, number) in found.keys { targets.append(try objectID(root, number, key)) }
                try keepTombstones(of: targets)
                try writer.deleteRows(matching: fetch)
                deletion.add(new: targets)
                try removeJoinRows(of: targets, in: root)
                try applyRules(afterDeleting: targets, foreignKeys, found.foreignKeys, &deletion, &effects, &pending)
            }
        } else {
            for (entity, keys) in Self.byEntity(request.objectIDs) {
                let root = entity.rootEntity
                for (key, number) in try writer.existingKeys(of: entity, among: keys) {
                    let id = try objectID(root, number, key)
                    if deletion.add(id) { pending.append(id) }
                }
            }
        }
        if targets.isEmpty { targets = pending }
        var result = StoreBatchResult()
        result.objectIDs = targets
        result.count = targets.count
        guard !deletion.ids.isEmpty else { return result }

        // Delete rules, breadth first over the rows cascade rules reach: each round deletes the
        // rows found by the one before.
        while !pending.isEmpty {
            let round = pending
            pending = []
            var byRoot: [ObjectIdentifier: (root: EntityDescription, ids: [ObjectID])] = [:]
            var order: [ObjectIdentifier] = []
            for id in round {
                let root = id.entity.rootEntity
                let key = ObjectIdentifier(root)
                if byRoot[key] == nil { order.append(key) }
                byRoot[key, default: (root, [])].ids.append(id)
            }
            for key in order {
                guard let (root, ids) = byRoot[key] else { continue }
                try deleteRound(ids, of: root, &deletion, &effects, &pending)
            }
        }

        // Deny: a destination that is not deleted too keeps its source.
        if !effects.denied.isEmpty || !effects.nullified.isEmpty { deletion.index() }
        if let refusal = effects.denied.first(where: { !deletion.contains($0.destination) }) {
            let r = refusal.relationship
            let remaining = effects.denied.filter {
                $0.source == refusal.source && $0.relationship === r && !deletion.contains($0.destination)
            }
            let owner = refusal.source.entity.name
            throw CoherenceError(
                .deleteDenied,
                "\(owner) \(refusal.source) cannot be deleted: relationship '\(r.name)' (delete rule deny) still has \(remaining.count) object(s), so the batch delete deletes nothing.",
                entity: owner, property: r.name, objectID: refusal.source, store: writer.storeLocation)
        }

        // Nullify: destinations that stay and hold a deleted row's key have it cleared; their
        // versions move on.
        var updates: [BatchChange] = []
        var clearing: [ObjectIdentifier: (inverse: RelationshipDescription, rows: [ObjectID])] = [:]
        var clearingOrder: [ObjectIdentifier] = []
        for (r, destination) in effects.nullified where !deletion.contains(destination) {
            guard let inverse = r.inverseRelationship else { continue }
            updates.append(BatchChange(objectID: destination, kind: .update, updatedProperties: [inverse.name]))
            let key = ObjectIdentifier(inverse)
            if clearing[key] == nil { clearingOrder.append(key) }
            clearing[key, default: (inverse, [])].rows.append(destination)
        }
        for key in clearingOrder {
            guard let (inverse, rows) = clearing[key], let owner = inverse.entity else { continue }
            let keys = Array(Set(rows.map(\.primaryKey))).sorted()
            guard try writer.updateRows(owner, keys: keys, properties: [inverse], values: [.null]) else {
                throw CoherenceError(
                    .storeWriteFailed, "Clearing '\(owner.name).\(inverse.name)' of deleted rows was refused.",
                    entity: owner.name, property: inverse.name, store: writer.storeLocation)
            }
        }

        result.changes.reserveCapacity(deletion.ids.count + updates.count)
        for id in deletion.ids { result.changes.append(BatchChange(objectID: id, kind: .delete, tombstone: tombstones[id] ?? [])) }
        result.changes += Self.coalesced(updates)
        return result
    }

    /// Deletes rows of one table (found by the request or a cascade rule) and applies their
    /// delete rules: the destinations the rules need through foreign keys and join tables are
    /// read first, then the rows and their join-table rows are deleted.
    private mutating func deleteRound(
        _ ids: [ObjectID], of root: EntityDescription, _ deletion: inout Deletion, _ effects: inout RuleEffects,
        _ pending: inout [ObjectID]
    ) throws(CoherenceError) {
        for (entity, keys) in Self.byEntity(ids) {
            for r in entity.relationships where Self.followsDestinations(r) {
                if case .inverseForeignKey = r.storage { continue }  // read after (applyRules)
                try follow(r, from: entity, keys, try writer.related(r, sources: keys), &deletion, &effects, &pending)
            }
        }
        try keepTombstones(of: ids)
        try writer.deleteRows(root, keys: ids.map(\.primaryKey))
        try removeJoinRows(of: ids, in: root)
        try applyRules(afterDeleting: ids, [], [], &deletion, &effects, &pending)
    }

    /// With history, reads the tombstones of rows about to be deleted (of the entities that keep
    /// values in them), as a context's save does: the values stored when the request runs.
    private mutating func keepTombstones(of ids: [ObjectID]) throws(CoherenceError) {
        guard var builder = history else { return }
        defer { history = builder }
        let kept = ids.filter { !builder.layout(of: $0.entity).tombstoneSlots.isEmpty }
        guard !kept.isEmpty else { return }
        for (id, row) in try writer.storedValues(of: kept) { tombstones[id] = builder.layout(of: id.entity).tombstone(of: row) }
    }

    /// Removes the join-table rows of deleted rows: those of their own relationships, and those
    /// of relationships without an inverse that entities keep to them.
    private mutating func removeJoinRows(of ids: [ObjectID], in root: EntityDescription) throws(CoherenceError) {
        for (entity, keys) in Self.byEntity(ids) {
            for r in entity.relationships where !r.isTransient {
                guard case .joinTable = r.storage else { continue }
                try writer.deleteJoinRows(r, keys: keys, destinations: false)
            }
        }
        guard let model = root.managedObjectModel else { return }
        var keys: [Int64]?
        for e in model.entities {
            for case let r as RelationshipDescription in e.ownProperties where !r.isTransient && r.inverseRelationship == nil {
                guard case .joinTable = r.storage, r.destinationEntity?.rootEntity === root else { continue }
                if keys == nil { keys = ids.map(\.primaryKey) }
                try writer.deleteJoinRows(r, keys: keys ?? [], destinations: true)
            }
        }
    }

    /// Applies the delete rules of deleted rows that need no join table: through their foreign
    /// keys (`values`, read before they were deleted) and through the foreign keys other rows
    /// hold to them.
    private mutating func applyRules(
        afterDeleting ids: [ObjectID], _ foreignKeys: [RelationshipDescription], _ values: [[Int64: Int64]],
        _ deletion: inout Deletion, _ effects: inout RuleEffects, _ pending: inout [ObjectID]
    ) throws(CoherenceError) {
        let groups = Self.byEntity(ids)
        for (r, targets) in zip(foreignKeys, values) where !targets.isEmpty {
            guard let destination = r.destinationEntity, let owner = r.entity else { continue }
            // The destinations that exist, with their entities.
            var existing: RelatedKeys = [:]
            for (key, number) in try writer.existingKeys(of: destination, among: Array(Set(targets.values)).sorted()) {
                existing[key] = [(key, number)]
            }
            var related: RelatedKeys = [:]
            for (source, target) in targets { if let found = existing[target] { related[source] = found } }
            for (entity, keys) in groups where entity.isKindOf(owner) {
                try follow(r, from: entity, keys, related, &deletion, &effects, &pending)
            }
        }
        for (entity, keys) in groups {
            for r in entity.relationships where Self.followsDestinations(r) {
                guard case .inverseForeignKey = r.storage else { continue }
                try follow(r, from: entity, keys, try writer.related(r, sources: keys), &deletion, &effects, &pending)
            }
        }
    }

    /// Applies a relationship's delete rule to the destinations of deleted rows of `entity`.
    private mutating func follow(
        _ r: RelationshipDescription, from entity: EntityDescription, _ keys: [Int64], _ related: RelatedKeys,
        _ deletion: inout Deletion, _ effects: inout RuleEffects, _ pending: inout [ObjectID]
    ) throws(CoherenceError) {
        guard !related.isEmpty, let destinationRoot = r.destinationEntity?.rootEntity else { return }
        for source in keys {
            guard let targets = related[source] else { continue }
            for (key, number) in targets {
                let target = try objectID(destinationRoot, number, key)
                switch r.deleteRule.kind {
                case .cascade: if deletion.add(target) { pending.append(target) }
                case .deny: effects.denied.append((r, objectID(entity, source), target))
                default: effects.nullified.append((r, target))
                }
            }
        }
    }

    // MARK: Changes

    /// One change per object, in the order objects first appear: a later update of an inserted
    /// object is part of its insert; updates of one object join their property names (and their
    /// recorded values: the first old value and the last new one).
    static func coalesced(_ changes: [BatchChange]) -> [BatchChange] {
        var index: [ObjectID: Int] = [:]
        var result: [BatchChange] = []
        result.reserveCapacity(changes.count)
        for c in changes {
            guard let i = index[c.objectID] else {
                index[c.objectID] = result.count
                result.append(c)
                continue
            }
            guard result[i].kind == .update, c.kind == .update else { continue }
            for name in c.updatedProperties where !result[i].updatedProperties.contains(name) {
                result[i].updatedProperties.append(name)
            }
            // Recorded values: the first old value and the last new one of each attribute.
            for v in c.values {
                if let n = result[i].values.firstIndex(where: { $0.slot == v.slot }) {
                    result[i].values[n].new = v.new
                } else {
                    result[i].values.append(v)
                }
            }
        }
        return result
    }
}
