import Foundation

/// A store kept in memory only, with the same semantics as ``SQLiteStore``: row versions,
/// uniqueness constraints, relationships, and predicates evaluated by ``QueryEvaluator`` with
/// the same answers as the SQL translation.
package final class InMemoryStore: StoreEngine {
    package let identifier: UUID
    package let configurationName: String?
    package let metadata: [String: String]
    package let entities: [EntityDescription]
    /// Whether the store records persistent history (``StoreOptions/persistentHistoryTracking``).
    package let tracksHistory: Bool
    let state: LockedValue<State>

    package var locationDescription: String { "in-memory \(identifier.uuidString)" }

    struct JoinPair: Hashable, Sendable {
        var first: Int64
        var second: Int64
    }

    struct State: Sendable {
        /// Rows by root entity, then by primary key.
        var tables: [ObjectIdentifier: [Int64: StoreRow]] = [:]
        /// Last allocated key by root entity.
        var lastKey: [ObjectIdentifier: Int64] = [:]
        /// Join tables by name.
        var joins: [String: Set<JoinPair>] = [:]
        /// The places of the destinations of ordered relationships kept in the destinations'
        /// keys (the SQL stores' order columns): by ``InMemoryStore/orderKey(_:)``, then by the
        /// destination's primary key.
        var orders: [String: [Int64: Int64]] = [:]
        /// Unique indexes: "<entity>|<constraint>" → values → key.
        var unique: [String: [[StoredValue]: Int64]] = [:]
        /// The committed state while a save is in progress (restored on rollback).
        var saved: Snapshot?
        var isClosed = false
        /// Persistent history, oldest first (when the store tracks it).
        var history = HistoryState()
    }

    /// The in-memory store's persistent history: what a SQLite store keeps in its history tables.
    struct HistoryState: Sendable {
        var transactions: [StoredHistoryTransaction] = []
        /// The highest transaction number ever deleted.
        var deletedThrough: Int64 = 0
        /// The last number handed out.
        var lastNumber: Int64 = 0
        /// The transaction of the save in progress (appended when it commits).
        var pending: StoredHistoryTransaction?
    }

    struct Snapshot: Sendable {
        var tables: [ObjectIdentifier: [Int64: StoreRow]]
        var joins: [String: Set<JoinPair>]
        var orders: [String: [Int64: Int64]] = [:]
        var unique: [String: [[StoredValue]: Int64]]
    }

    /// The key of an ordered relationship's places in ``State/orders`` (the destinations'
    /// table and the order column the SQL stores use).
    static func orderKey(_ r: RelationshipDescription) -> String {
        let inverse = r.inverseRelationship
        return (inverse?.entity?.rootEntity.name ?? "") + "." + (inverse?.name ?? r.name)
    }

    /// A new, empty store for the entities of `configuration` (`historyTracking`: record
    /// persistent history).
    package init(model: ManagedObjectModel, configuration: String?, historyTracking: Bool = false) throws(CoherenceError) {
        guard let entities = model.entities(forConfiguration: configuration) else {
            throw CoherenceError(.storeOpenFailed, "The model has no configuration named '\(configuration ?? "")'.")
        }
        let id = UUID()
        self.identifier = id
        self.configurationName = configuration
        self.entities = entities
        self.metadata = [
            "storeUUID": id.uuidString,
            "modelVersionHash": model.versionHash(forConfiguration: configuration) ?? model.versionHash,
            "configuration": configuration ?? ManagedObjectModel.defaultConfigurationName,
            "storeType": "InMemory"
        ]
        self.tracksHistory = historyTracking
        self.state = LockedValue(State())
    }

    package func close() {
        state.withLock { $0 = State(isClosed: true) }
    }

    private func read<T>(_ body: (borrowing State) throws(CoherenceError) -> T) throws(CoherenceError) -> T {
        try state.withLock { (s: inout State) throws(CoherenceError) -> T in
            guard !s.isClosed else {
                throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription)
            }
            // Readers see the committed state, not a save in progress.
            if s.saved != nil { return try body(Self.committed(s)) }
            return try body(s)
        }
    }

    /// The committed state: `s`, or what it was before the save in progress (the tables share
    /// their storage until one side changes).
    static func committed(_ s: borrowing State) -> State {
        guard let saved = s.saved else { return copy s }
        var committed = State()
        committed.tables = saved.tables
        committed.joins = saved.joins
        committed.orders = saved.orders
        committed.lastKey = s.lastKey
        return committed
    }

    /// Reads the committed state `snapshot` kept when it is one of this store's snapshots, else
    /// the committed state now.
    private func read<T>(
        _ snapshot: (any StoreSnapshot)?, _ body: (borrowing State) throws(CoherenceError) -> T
    ) throws(CoherenceError) -> T {
        guard let snapshot = snapshot as? MemorySnapshot else { return try read(body) }
        guard !state.withLock({ $0.isClosed }) else {
            throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription)
        }
        guard let kept = snapshot.state else { throw QueryGeneration.releasedError(store: locationDescription) }
        return try body(kept)
    }

    // MARK: Reads

    func matchingRows(_ fetch: StoreFetch, in s: borrowing State) -> [StoreRow] {
        let root = fetch.entity.rootEntity
        guard let table = s.tables[ObjectIdentifier(root)] else { return [] }
        let allowed: Set<Int> = fetch.includesSubentities ? Set(fetch.entity.descendantNumbers) : [fetch.entity.entityNumber]
        let context = RowContext(state: copy s, store: self)
        var rows: [StoreRow] = []
        for row in table.values where allowed.contains(row.entity.entityNumber) {
            if let p = fetch.predicate, !QueryEvaluator.matches(p, row: MemoryRow(row: row, context: context)) { continue }
            rows.append(row)
        }
        let keys = fetch.sortKeys
        rows.sort { a, b in
            if !keys.isEmpty {
                let ra = MemoryRow(row: a, context: context), rb = MemoryRow(row: b, context: context)
                if QueryEvaluator.areInIncreasingOrder(ra, rb, keys: keys) { return true }
                if QueryEvaluator.areInIncreasingOrder(rb, ra, keys: keys) { return false }
            }
            return a.primaryKey < b.primaryKey
        }
        if fetch.offset > 0 { rows = Array(rows.dropFirst(fetch.offset)) }
        if let limit = fetch.limit, rows.count > limit { rows = Array(rows.prefix(limit)) }
        return rows
    }

    package func fetch(_ fetch: StoreFetch) throws(CoherenceError) -> [StoreRow] {
        try read(fetch.generation?.snapshot(of: identifier)) { s in matchingRows(fetch, in: s) }
    }

    package func fetchKeys(_ fetch: StoreFetch) throws(CoherenceError) -> [(primaryKey: Int64, entityNumber: Int)] {
        try read(fetch.generation?.snapshot(of: identifier)) { s in
            matchingRows(fetch, in: s).map { ($0.primaryKey, $0.entity.entityNumber) }
        }
    }

    package func count(_ fetch: StoreFetch) throws(CoherenceError) -> Int {
        try read(fetch.generation?.snapshot(of: identifier)) { s in
            var f = fetch
            f.sortKeys = []
            return matchingRows(f, in: s).count
        }
    }

    package func rows(of entity: EntityDescription, keys: [Int64], in snapshot: (any StoreSnapshot)?) throws(CoherenceError) -> [StoreRow] {
        try read(snapshot) { s in
            guard let table = s.tables[ObjectIdentifier(entity.rootEntity)] else { return [] }
            // Rows of `entity` and its sub-entities only, as the SQLite store reads them.
            if entity.superentity == nil { return keys.compactMap { table[$0] } }
            return keys.compactMap { table[$0] }.filter { $0.entity.isKindOf(entity) }
        }
    }

    package func related(
        _ relationship: RelationshipDescription, sources: [Int64], in snapshot: (any StoreSnapshot)?
    ) throws(CoherenceError) -> RelatedKeys {
        try read(snapshot) { s in related(relationship, sources: sources, in: copy s) }
    }

    /// Destination rows of a relationship kept in their keys, in its order: by key, or for an
    /// ordered relationship with places (``RelationshipDescription/keepsOrderInDestinations``)
    /// by place, rows without one after the others by key (as the SQL stores read them).
    static func ordered(_ rows: some Collection<StoreRow>, _ r: RelationshipDescription, in s: State) -> [StoreRow] {
        guard r.keepsOrderInDestinations, let places = s.orders[orderKey(r)], !places.isEmpty else {
            return rows.sorted { $0.primaryKey < $1.primaryKey }
        }
        return rows.sorted { a, b in
            switch (places[a.primaryKey], places[b.primaryKey]) {
            case (let x?, let y?): return x != y ? x < y : a.primaryKey < b.primaryKey
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a.primaryKey < b.primaryKey
            }
        }
    }

    /// Destinations of a relationship for several source keys, in a state (committed, or a
    /// batch request's state in progress).
    func related(_ relationship: RelationshipDescription, sources: [Int64], in s: State) -> RelatedKeys {
        let context = RowContext(state: s, store: self)
        var result: RelatedKeys = [:]
        let wanted = Set(sources)
        switch relationship.storage {
        case .foreignKey:
            guard let source = relationship.entity, let table = s.tables[ObjectIdentifier(source.rootEntity)] else { return [:] }
            for pk in sources {
                guard let row = table[pk], case .integer(let fk) = row.values[relationship.slot],
                    let dest = context.row(of: relationship.destinationEntity, key: fk)
                else { continue }
                result[pk] = [(fk, dest.entity.entityNumber)]
            }
        case .inverseForeignKey:
            guard let inverse = relationship.inverseRelationship, let dest = relationship.destinationEntity,
                let table = s.tables[ObjectIdentifier(dest.rootEntity)]
            else { return [:] }
            let allowed = Set(dest.descendantNumbers)
            for row in Self.ordered(table.values, relationship, in: s) where allowed.contains(row.entity.entityNumber) {
                if case .integer(let fk) = row.values[inverse.slot], wanted.contains(fk) {
                    result[fk, default: []].append((row.primaryKey, row.entity.entityNumber))
                }
            }
        case .joinTable(let name, let sourceIsFirst):
            for pair in (s.joins[name] ?? []).sorted(by: { ($0.first, $0.second) < ($1.first, $1.second) }) {
                let (src, dst) = sourceIsFirst ? (pair.first, pair.second) : (pair.second, pair.first)
                guard wanted.contains(src), let dest = context.row(of: relationship.destinationEntity, key: dst) else { continue }
                result[src, default: []].append((dst, dest.entity.entityNumber))
            }
        }
        return result
    }

    package func allocateKeys(for entity: EntityDescription, count: Int) throws(CoherenceError) -> Int64 {
        try state.withLock { (s: inout State) throws(CoherenceError) -> Int64 in
            guard !s.isClosed else { throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription) }
            let key = ObjectIdentifier(entity.rootEntity)
            let first = (s.lastKey[key] ?? 0) + 1
            s.lastKey[key] = first + Int64(count) - 1
            return first
        }
    }

    // MARK: Saves

    package func beginSave(_ changes: StoreChangeSet) throws(CoherenceError) -> StoreSaveResult {
        try state.withLock { (s: inout State) throws(CoherenceError) -> StoreSaveResult in
            guard !s.isClosed else { throw CoherenceError(.storeNotAttached, "The store has been closed.", store: locationDescription) }
            s.saved = Snapshot(tables: s.tables, joins: s.joins, orders: s.orders, unique: s.unique)
            var writer = MemoryWriter(store: self)
            do throws(CoherenceError) {
                // With history, the tombstones of deleted objects are read before their rows go.
                var history: HistoryBuilder?
                var storedRows: [ObjectID: [StoredValue]] = [:]
                if tracksHistory {
                    var builder = HistoryBuilder()
                    for id in builder.objectsNeedingTombstones(changes) {
                        if let row = s.tables[ObjectIdentifier(id.entity.rootEntity)]?[id.primaryKey] { storedRows[id] = row.values }
                    }
                    history = builder
                }
                let result = try writer.write(changes, into: &s)
                if !writer.conflicts.isEmpty {
                    var error = CoherenceError(.conflict, "The save has \(writer.conflicts.count) conflict(s).", store: locationDescription)
                    error.conflicts = writer.conflicts
                    throw error
                }
                if var builder = history {
                    let records = builder.changes(for: changes, insertedIDs: result.insertedIDs, storedRows: storedRows)
                    Self.recordHistory(
                        HistoryTransactionRecord(author: changes.transactionAuthor, contextName: changes.contextName, changes: records),
                        in: &s)
                }
                return result
            } catch {
                Self.restore(&s)
                throw error
            }
        }
    }

    static func restore(_ s: inout State) {
        s.history.pending = nil
        guard let saved = s.saved else { return }
        s.tables = saved.tables
        s.joins = saved.joins
        s.orders = saved.orders
        s.unique = saved.unique
        s.saved = nil
    }

    package func commitSave() throws(CoherenceError) {
        state.withLock { s in
            s.saved = nil
            if let t = s.history.pending {
                s.history.transactions.append(t)
                s.history.lastNumber = t.number
                s.history.pending = nil
            }
        }
    }

    package func rollbackSave() {
        state.withLock { Self.restore(&$0) }
    }

    /// The unique-index key of a constraint.
    static func uniqueKey(_ entity: EntityDescription, _ constraint: [String]) -> String {
        entity.name + "|" + constraint.joined(separator: ",")
    }
}

/// Read access to a state for predicate evaluation.
struct RowContext {
    let state: InMemoryStore.State
    let store: InMemoryStore

    func row(of entity: EntityDescription?, key: Int64) -> StoreRow? {
        guard let entity else { return nil }
        return state.tables[ObjectIdentifier(entity.rootEntity)]?[key]
    }
}

/// A row of the in-memory store seen by ``QueryEvaluator``.
struct MemoryRow: QueryRow {
    let row: StoreRow
    let context: RowContext

    var queryEntity: EntityDescription { row.entity }
    var queryObjectID: ObjectID {
        ObjectID(entity: row.entity, storeIdentifier: context.store.identifier, primaryKey: row.primaryKey)
    }
    func queryValue(at slot: Int) -> StoredValue { slot < row.values.count ? row.values[slot] : .null }

    func queryToOne(_ r: RelationshipDescription) -> (any QueryRow)? {
        switch r.storage {
        case .foreignKey:
            guard case .integer(let fk) = queryValue(at: r.slot), let dest = context.row(of: r.destinationEntity, key: fk) else {
                return nil
            }
            return MemoryRow(row: dest, context: context)
        case .inverseForeignKey:
            return queryToMany(r).first
        case .joinTable:
            return nil
        }
    }

    func queryToMany(_ r: RelationshipDescription) -> [any QueryRow] {
        switch r.storage {
        case .foreignKey:
            return queryToOne(r).map { [$0] } ?? []
        case .inverseForeignKey:
            guard let inverse = r.inverseRelationship, let dest = r.destinationEntity,
                let table = context.state.tables[ObjectIdentifier(dest.rootEntity)]
            else { return [] }
            let allowed = Set(dest.descendantNumbers)
            let rows = table.values.filter {
                allowed.contains($0.entity.entityNumber) && $0.values[inverse.slot] == .integer(row.primaryKey)
            }
            return InMemoryStore.ordered(rows, r, in: context.state).map { MemoryRow(row: $0, context: context) }
        case .joinTable(let name, let sourceIsFirst):
            let pairs = context.state.joins[name] ?? []
            return pairs.compactMap { pair -> (any QueryRow)? in
                let (src, dst) = sourceIsFirst ? (pair.first, pair.second) : (pair.second, pair.first)
                guard src == row.primaryKey, let dest = context.row(of: r.destinationEntity, key: dst) else { return nil }
                return MemoryRow(row: dest, context: context)
            }
        }
    }
}
