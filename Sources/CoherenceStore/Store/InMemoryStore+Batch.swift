import Foundation

extension InMemoryStore {
    /// Runs a batch request and leaves it open for ``commitSave()`` (readers see the committed
    /// state until then); on any error the state is restored and nothing is written.
    ///
    /// An insert's rows are made first, before the store is locked: the handler that fills them
    /// is the caller's code, which may read this store.
    package func beginBatch(
        _ request: StoreBatchRequest, author: String?, contextName: String?
    ) throws(CoherenceError) -> StoreBatchResult {
        var request = request
        if case .insert(var insert) = request {
            let initial = insert.entity.initialValues
            var rows: [[StoredValue]] = []
            if let n = insert.rowCount { rows.reserveCapacity(n) }
            var values = initial
            while try insert.nextRow(&values) {
                rows.append(values)
                values = initial
            }
            var next = 0
            insert.rowCount = rows.count
            insert.nextRow = { (values: inout [StoredValue]) throws(CoherenceError) -> Bool in
                guard next < rows.count else { return false }
                values = rows[next]
                next += 1
                return true
            }
            request = .insert(insert)
        }
        return try state.withLock { (s: inout State) throws(CoherenceError) -> StoreBatchResult in
            guard !s.isClosed else { throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription) }
            s.saved = Snapshot(tables: s.tables, joins: s.joins, unique: s.unique)
            var executor = BatchExecutor(writer: MemoryBatchWriter(store: self, state: s))
            do throws(CoherenceError) {
                let result = try executor.run(request, author: author, contextName: contextName)
                s = executor.writer.state
                return result
            } catch {
                Self.restore(&s)
                throw error
            }
        }
    }
}

/// A batch request's row operations on a copy of the in-memory store's state, which replaces
/// the state when the request succeeds. The same rules as ``MemoryWriter`` (unique indexes,
/// versions, join pairs).
struct MemoryBatchWriter: BatchWriter {
    let store: InMemoryStore
    /// The state being changed (the store's, with the committed state saved in it).
    var state: InMemoryStore.State
    /// The save writer's unique-index bookkeeping.
    private let indexes: MemoryWriter

    init(store: InMemoryStore, state: InMemoryStore.State) {
        self.store = store
        self.state = state
        self.indexes = MemoryWriter(store: store)
    }

    /// With persistent history on, every request records one history transaction.
    var recordsChanges: Bool { store.tracksHistory }

    /// Records the request's history transaction in the state being changed.
    mutating func record(_ transaction: HistoryTransactionRecord) throws(CoherenceError) {
        InMemoryStore.recordHistory(transaction, in: &state)
    }

    var storeIdentifier: UUID { store.identifier }
    var storeLocation: String { store.locationDescription }

    mutating func allocateKeys(for root: EntityDescription, count: Int) throws(CoherenceError) -> Int64 {
        let key = ObjectIdentifier(root)
        let first = (state.lastKey[key] ?? 0) + 1
        state.lastKey[key] = first + Int64(count) - 1
        return first
    }

    mutating func insertRow(_ entity: EntityDescription, key: Int64, values: [StoredValue]) throws(CoherenceError) -> Bool {
        let row = StoreRow(entity: entity, primaryKey: key, version: 1, values: values)
        guard MemoryWriter.collisions(of: row, in: state).isEmpty else { return false }
        indexes.addUnique(row, to: &state)
        state.tables[ObjectIdentifier(entity.rootEntity), default: [:]][key] = row
        return true
    }

    mutating func uniquenessMatches(_ entity: EntityDescription, values: [StoredValue]) throws(CoherenceError) -> [(
        constraint: [String], rows: [ObjectID]
    )] {
        // A row that is not stored (no key is negative).
        let row = StoreRow(entity: entity, primaryKey: -1, version: 0, values: values)
        return MemoryWriter.collisions(of: row, in: state).map { constraint, other in
            (constraint, [ObjectID(entity: other.entity, storeIdentifier: storeIdentifier, primaryKey: other.primaryKey)])
        }
    }

    mutating func row(_ id: ObjectID) throws(CoherenceError) -> StoreRow? {
        state.tables[ObjectIdentifier(id.entity.rootEntity)]?[id.primaryKey].flatMap { $0.entity.isKindOf(id.entity) ? $0 : nil }
    }

    mutating func updateRows(
        _ entity: EntityDescription, keys: [Int64], properties: [PropertyDescription],
        values: [StoredValue]
    ) throws(CoherenceError) -> Bool {
        let root = ObjectIdentifier(entity.rootEntity)
        var originals: [StoreRow] = []
        for key in keys {
            guard let old = state.tables[root]?[key] else { continue }
            var new = old
            for (p, v) in zip(properties, values) { new.values[p.slot] = v }
            new.version = SQLGenerator.nextVersion(after: old.version)
            indexes.removeUnique(old, from: &state)
            guard MemoryWriter.collisions(of: new, in: state).isEmpty else {
                // Refused: the rows written so far get their values back, as one SQL statement would.
                indexes.addUnique(old, to: &state)
                for o in originals.reversed() {
                    if let written = state.tables[root]?[o.primaryKey] { indexes.removeUnique(written, from: &state) }
                    indexes.addUnique(o, to: &state)
                    state.tables[root]?[o.primaryKey] = o
                }
                return false
            }
            indexes.addUnique(new, to: &state)
            state.tables[root]?[key] = new
            originals.append(old)
        }
        return true
    }

    mutating func keys(matching fetch: StoreFetch, foreignKeys: [RelationshipDescription]) throws(CoherenceError) -> (
        keys: [(primaryKey: Int64, entityNumber: Int)], foreignKeys: [[Int64: Int64]]
    ) {
        let rows = store.matchingRows(fetch, in: state)
        let values = foreignKeys.map { r -> [Int64: Int64] in
            var found: [Int64: Int64] = [:]
            guard let owner = r.entity else { return found }
            // (A sibling entity's row may hold another property at the relationship's slot.)
            for row in rows where row.entity.isKindOf(owner) {
                if case .integer(let target) = row.values[r.slot] { found[row.primaryKey] = target }
            }
            return found
        }
        return (rows.map { ($0.primaryKey, $0.entity.entityNumber) }, values)
    }

    mutating func existingKeys(of entity: EntityDescription, among keys: [Int64]) throws(CoherenceError) -> [(
        primaryKey: Int64, entityNumber: Int
    )] {
        guard let table = state.tables[ObjectIdentifier(entity.rootEntity)] else { return [] }
        var seen = Set<Int64>()
        return keys.compactMap { key in
            guard seen.insert(key).inserted, let row = table[key], row.entity.isKindOf(entity) else { return nil }
            return (key, row.entity.entityNumber)
        }
    }

    mutating func related(_ relationship: RelationshipDescription, sources: [Int64]) throws(CoherenceError) -> RelatedKeys {
        store.related(relationship, sources: sources, in: state)
    }

    mutating func deleteJoinRows(_ relationship: RelationshipDescription, keys: [Int64], destinations: Bool) throws(CoherenceError) {
        guard case .joinTable(let name, let sourceIsFirst) = relationship.storage, let pairs = state.joins[name] else { return }
        let gone = Set(keys)
        // The column the keys are in: the relationship's own side, or the other one.
        let first = sourceIsFirst != destinations
        state.joins[name] = pairs.filter { !gone.contains(first ? $0.first : $0.second) }
    }

    mutating func deleteRows(_ root: EntityDescription, keys: [Int64]) throws(CoherenceError) {
        let table = ObjectIdentifier(root)
        for key in keys {
            guard let row = state.tables[table]?[key] else { continue }
            indexes.removeUnique(row, from: &state)
            state.tables[table]?[key] = nil
        }
    }

    mutating func deleteRows(matching fetch: StoreFetch) throws(CoherenceError) {
        try deleteRows(fetch.entity.rootEntity, keys: store.matchingRows(fetch, in: state).map(\.primaryKey))
    }
}
