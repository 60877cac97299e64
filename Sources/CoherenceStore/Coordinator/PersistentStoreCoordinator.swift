import Foundation

/// Connects a model to its stores, as Core Data's `NSPersistentStoreCoordinator`.
///
/// Stores can be added and removed at run time; SQLite and in-memory stores work side by side,
/// each entity routed to the stores whose configuration holds it. Fetches span every store that
/// holds the entity. A save writes each store's part in one transaction, and all of them or
/// none when they succeed or fail together (a failure after another store committed is
/// reported, as in Core Data).
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// try coordinator.addPersistentStore(type: .sqlite, at: url)
/// try coordinator.addPersistentStore(type: .inMemory, configuration: "Cache")
/// ```
///
/// The coordinator is `Sendable`: contexts on any thread share it.
public final class PersistentStoreCoordinator: Sendable {
    /// The model.
    public let managedObjectModel: ManagedObjectModel
    /// Snapshots of rows by object ID.
    package let rowCache = RowCache()
    /// The pinned query generations of this coordinator's contexts.
    package let queryGenerations = QueryGenerationRegistry()
    /// Who hears of the saves made through this coordinator (see ``subscribe(_:)``).
    private let observers = CoordinatorObservers()
    private let stores = LockedValue<[PersistentStore]>([])
    /// Serializes saves (and key allocation, history deletes and batch requests) across contexts.
    let saveLock = LockedValue<Void>()
    /// The stores whose other writers this coordinator listens to, by identifier (see
    /// ``remoteChanges``).
    let remoteWatches = LockedValue<[UUID: RemoteWatch]>([:])
    /// The streams of ``remoteChanges``.
    let remoteChangeBroadcaster = Broadcaster<PersistentStoreRemoteChange>()
    /// One value after each batch request this coordinator committed: no context merges those,
    /// and ``remoteChanges`` does not post a coordinator's own commits, so the history kits
    /// listen here too (to merge a batch importer's requests made through their own container).
    package let batchCommits = Broadcaster<Void>()
    /// Called with each store just attached, on the attaching thread, before
    /// ``addPersistentStore(type:configuration:at:options:)`` returns (the history kits record
    /// their author's starting progress there), by key.
    package let attachObservers = LockedValue<[ObjectIdentifier: @Sendable (PersistentStore) -> Void]>([:])
    /// Test hook: called after each look at a store whose watcher woke up, with the store's
    /// identifier and whether another writer had committed (a change was posted).
    package let remoteCheckHook = LockedValue<(@Sendable (UUID, Bool) -> Void)?>(nil)
    /// Test hook: called with a store's identifier just before its transaction commits — a
    /// save's or a batch request's rows and history written, `COMMIT` not yet run — on the
    /// saving thread, under the save lock (`CoherenceTestWriter --hang-before-commit` blocks in
    /// it to be killed there).
    package let beforeCommitHook = LockedValue<(@Sendable (UUID) -> Void)?>(nil)

    /// Subscribes `observer` to the saves made through this coordinator (held weakly, once).
    package func subscribe(_ observer: any CoordinatorObserver) {
        observers.subscribe(observer)
    }

    /// Tells every observer but `source` that `source` saved `event` through this coordinator.
    package func publishSave(_ event: ContextEvent, from source: AnyObject) {
        for o in observers.observers(except: source) { o.coordinatorDidSave(event, from: source) }
    }

    /// Creates a coordinator with no stores.
    public init(managedObjectModel: ManagedObjectModel) {
        self.managedObjectModel = managedObjectModel
    }

    deinit {
        stopWatchingRemoteChanges()
        remoteChangeBroadcaster.finish()
        batchCommits.finish()
        for s in stores.withLock({ $0 }) { s.engine.close() }
    }

    // MARK: Stores

    /// The attached stores, in the order they were added.
    public var persistentStores: [PersistentStore] { stores.withLock { $0 } }

    /// Adds a store.
    /// - Parameters:
    ///   - type: `.sqlite` (needs `url`), `.inMemory`, or a store type of another product
    ///     (`.postgreSQL`, whose `url` is the server's connection URL).
    ///   - configuration: the model configuration the store holds (nil: every entity).
    ///   - url: the SQLite file; its directory must exist.
    ///   - options: how the store is opened and saved (``StoreOptions``), persistent history
    ///     included.
    /// A SQLite or PostgreSQL store made with another version of the model is migrated first (one
    /// transaction), unless ``StoreOptions/migratesAutomatically`` is off. A SQLite store made by Apple's Core
    /// Data is read and written in its own layout (see the Migrations guide).
    /// - Throws: `.storeOpenFailed`, `.storeIncompatible`, `.alreadyAttached`, `.invalidRequest`,
    ///   `.historyTrackingRequired` (a SQLite store with history opened without
    ///   ``StoreOptions/persistentHistoryTracking``), `.migrationNotInferable`,
    ///   `.migrationMissingValues`, `.migrationUniquenessViolated`, `.migrationFailed`,
    ///   `.storeLayoutMismatch` (a store made by Core Data whose tables do not fit the model).
    @discardableResult
    public func addPersistentStore(
        type: StoreType, configuration: String? = nil, at url: URL? = nil,
        options: StoreOptions = StoreOptions()
    ) throws(CoherenceError) -> PersistentStore {
        let configuration = configuration == ManagedObjectModel.defaultConfigurationName ? nil : configuration
        guard let entities = managedObjectModel.entities(forConfiguration: configuration) else {
            throw CoherenceError(
                .invalidRequest, "The model has no configuration named '\(configuration ?? "")'.",
                store: url?.path)
        }
        let engine: any StoreEngine
        var publicURL = type == .sqlite ? url?.standardizedFileURL : nil
        switch type {
        case _ where type.factory != nil:
            guard let factory = type.factory else { throw CoherenceError(.invalidRequest, "No factory for \(type) stores.") }
            publicURL = factory.publicURL(for: url)
            if let publicURL, stores.withLock({ $0.contains { $0.url == publicURL } }) {
                throw CoherenceError(.alreadyAttached, "A store at this location is already attached.", store: publicURL.absoluteString)
            }
            if let manager = options.stagedMigrationManager, let url {
                try manager.migrateStore(type: type, at: url, configuration: configuration, to: managedObjectModel, options: options)
            }
            engine = try factory.makeEngine(url: url, model: managedObjectModel, configuration: configuration, options: options)
        case .sqlite:
            guard let url else {
                throw CoherenceError(.invalidRequest, "A SQLite store needs a file URL.")
            }
            let standardized = url.standardizedFileURL
            if stores.withLock({ $0.contains { $0.url?.standardizedFileURL == standardized } }) {
                throw CoherenceError(.alreadyAttached, "A store at this location is already attached.", store: url.path)
            }
            if let manager = options.stagedMigrationManager, FileManager.default.fileExists(atPath: standardized.path) {
                try manager.migrateStore(
                    type: .sqlite, at: standardized, configuration: configuration, to: managedObjectModel, options: options)
            }
            engine = try SQLiteStore(
                url: standardized, model: managedObjectModel, configuration: configuration,
                synchronous: options.synchronous, historyTracking: options.persistentHistoryTracking,
                writeAheadLog: options.writeAheadLog,
                migratesAutomatically: options.migratesAutomatically && options.infersMappingModelAutomatically)
        default:
            engine = try InMemoryStore(
                model: managedObjectModel, configuration: configuration, historyTracking: options.persistentHistoryTracking)
        }
        let store = PersistentStore(
            type: type, url: publicURL, openedURL: url, options: options,
            engine: engine, entities: entities)
        let duplicate = stores.withLock { list -> Bool in
            if list.contains(where: { $0.identifier == store.identifier }) { return true }
            list.append(store)
            return false
        }
        if duplicate {
            engine.close()
            throw CoherenceError(
                .alreadyAttached, "A store with the same UUID is already attached (a copy of the same file?).",
                store: store.url.map { type.factory == nil ? $0.path : $0.absoluteString })
        }
        if options.remoteChangeNotificationPost && (type == .sqlite || engine is any RemoteChangeSource) {
            do {
                try startWatchingRemoteChanges(store)
            } catch {
                stores.withLock { $0.removeAll { $0 === store } }
                engine.close()
                throw error
            }
        }
        for observe in attachObservers.withLock({ Array($0.values) }) { observe(store) }
        return store
    }

    /// Removes a store and closes its file.
    /// - Throws: `.storeNotAttached` when the store is not attached to this coordinator.
    public func remove(_ store: PersistentStore) throws(CoherenceError) {
        let removed = stores.withLock { list -> Bool in
            guard let i = list.firstIndex(where: { $0 === store }) else { return false }
            list.remove(at: i)
            return true
        }
        guard removed else {
            throw CoherenceError(
                .storeNotAttached, "The store is not attached to this coordinator.",
                store: Self.location(of: store))
        }
        stopWatchingRemoteChanges(store)
        saveLock.withLock { () -> Void in store.engine.close() }
        rowCache.removeAll(inStore: store.identifier)
    }

    /// The attached store at a file URL.
    public func persistentStore(for url: URL) -> PersistentStore? {
        let u = url.standardizedFileURL
        return stores.withLock { $0.first { $0.url == u } }
    }

    /// The attached store with an identifier.
    public func persistentStore(withIdentifier identifier: UUID) -> PersistentStore? {
        stores.withLock { $0.first { $0.identifier == identifier } }
    }

    /// The stores that hold `entity`.
    package func stores(for entity: EntityDescription) -> [PersistentStore] {
        stores.withLock { $0.filter { $0.holds(entity) } }
    }

    /// The store an object lives in (nil for temporary IDs or detached stores).
    package func store(for id: ObjectID) -> PersistentStore? {
        guard let sid = id.storeIdentifier else { return nil }
        return persistentStore(withIdentifier: sid)
    }

    // MARK: Object IDs

    /// The object ID a URI names, or nil when it is not an ID of an attached store and model.
    public func managedObjectID(forURIRepresentation uri: URL) -> ObjectID? {
        guard uri.scheme == "x-coredata", let host = uri.host, let storeID = UUID(uuidString: host),
            persistentStore(withIdentifier: storeID) != nil
        else { return nil }
        // Split before decoding: the entity name was escaped (a "/" or "%" in it too), and
        // `path` would decode it once already.
        let parts = uri.path(percentEncoded: true).split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 2, let name = String(parts[0]).removingPercentEncoding,
            let entity = managedObjectModel.entitiesByName[name], parts[1].first == "p",
            let key = Int64(parts[1].dropFirst())
        else { return nil }
        return ObjectID(entity: entity, storeIdentifier: storeID, primaryKey: key)
    }

    /// Permanent IDs for temporary ones, each in the first attached store that holds its entity;
    /// permanent IDs are returned unchanged. (A context's `obtainPermanentIDs(for:)` also honours
    /// ``ManagedObjectContext/assign(_:to:)``.)
    public func obtainPermanentIDs(for ids: [ObjectID]) throws(CoherenceError) -> [ObjectID] {
        try obtainPermanentIDs(for: ids, assignedStores: [:])
    }

    /// Permanent IDs for temporary ones, each in the store `assignedStores` names for it (store
    /// identifiers by temporary ID) or else in the first attached store that holds its entity.
    package func obtainPermanentIDs(for ids: [ObjectID], assignedStores: [ObjectID: UUID]) throws(CoherenceError) -> [ObjectID] {
        var result = ids
        var byStoreAndRoot: [String: (PersistentStore, EntityDescription, [Int])] = [:]
        for (i, id) in ids.enumerated() where id.isTemporaryID {
            let store = try store(forNew: id, assignedStores: assignedStores)
            let key = store.identifier.uuidString + "/" + id.entity.rootEntity.name
            byStoreAndRoot[key, default: (store, id.entity.rootEntity, [])].2.append(i)
        }
        try saveLock.withLock { () throws(CoherenceError) in
            for (_, (store, root, indexes)) in byStoreAndRoot {
                var next = try store.engine.allocateKeys(for: root, count: indexes.count)
                for i in indexes {
                    result[i] = ObjectID(entity: ids[i].entity, storeIdentifier: store.identifier, primaryKey: next)
                    next += 1
                }
            }
        }
        return result
    }

    /// The store a new object goes to: the one it was assigned to (`assignedStores`: store
    /// identifiers by temporary ID, see ``ManagedObjectContext/assign(_:to:)``), else the first
    /// attached store that holds its entity, as in Core Data.
    /// - Throws: `.storeNotAttached` when the assigned store was removed since; `.noStoreForEntity`
    ///   when no attached store holds the entity.
    package func store(forNew id: ObjectID, assignedStores: [ObjectID: UUID]) throws(CoherenceError) -> PersistentStore {
        if !assignedStores.isEmpty, let identifier = assignedStores[id] {
            guard let store = persistentStore(withIdentifier: identifier) else {
                throw CoherenceError(
                    .storeNotAttached, "\(id) was assigned to store \(identifier.uuidString), which is no longer attached.",
                    entity: id.entity.name, objectID: id, store: identifier.uuidString)
            }
            return store
        }
        guard let store = stores(for: id.entity).first else {
            throw Self.noStoreError(id.entity)
        }
        return store
    }

    /// The stores that hold `entity`, for a read or a save of it.
    /// - Throws: `.noStoreForEntity` when no attached store holds it: a fetch must not answer
    ///   "nothing" about data it cannot see.
    package func readStores(for entity: EntityDescription) throws(CoherenceError) -> [PersistentStore] {
        let stores = self.stores(for: entity)
        if stores.isEmpty { throw Self.noStoreError(entity) }
        return stores
    }

    static func noStoreError(_ entity: EntityDescription) -> CoherenceError {
        CoherenceError(.noStoreForEntity, "No attached store holds entity '\(entity.name)'.", entity: entity.name)
    }

    // MARK: Fetching

    /// Rows matching a compiled fetch, with their object IDs, across every store holding the
    /// entity.
    /// - Throws: `.noStoreForEntity` when no attached store holds the entity.
    package func fetchRows(_ fetch: StoreFetch) throws(CoherenceError) -> [(id: ObjectID, row: StoreRow)] {
        try fetchRows(fetch, from: try readStores(for: fetch.entity))
    }

    /// The rows of `stores` a fetch matches, merged across them (sorted, limit and offset
    /// applied to them all together).
    func fetchRows(_ fetch: StoreFetch, from stores: [PersistentStore]) throws(CoherenceError) -> [(id: ObjectID, row: StoreRow)] {
        if stores.count == 1, let store = stores.first {
            return try store.engine.fetch(fetch).map {
                (ObjectID(entity: $0.entity, storeIdentifier: store.identifier, primaryKey: $0.primaryKey), $0)
            }
        }
        var perStore = fetch
        // Each store's first `limit + offset` rows (saturating: a limit near `Int.max` means all).
        if let limit = fetch.limit {
            let (sum, overflow) = limit.addingReportingOverflow(fetch.offset)
            perStore.limit = overflow ? Int.max : sum
        }
        perStore.offset = 0
        var all: [(id: ObjectID, row: StoreRow)] = []
        for store in stores {
            for row in try store.engine.fetch(perStore) {
                all.append((ObjectID(entity: row.entity, storeIdentifier: store.identifier, primaryKey: row.primaryKey), row))
            }
        }
        return try Self.mergeAcrossStores(all, fetch: fetch)
    }

    /// When exactly one store holds the fetch's entity, hands each row (with its object ID) to
    /// `body` as the store reads it and returns true; returns false when several do. Before the
    /// first row, `begin` learns how many rows the store expects (see
    /// ``StoreEngine/fetch(_:expecting:each:)``). Contexts register objects this way without
    /// holding every row first.
    /// - Throws: `.noStoreForEntity` when no attached store holds the entity.
    package func forEachSingleStoreRow(
        _ fetch: StoreFetch, begin: (_ expectedRows: Int) -> Void,
        _ body: RowReceiver
    ) throws(CoherenceError) -> Bool {
        let stores = try readStores(for: fetch.entity)
        guard stores.count == 1, let store = stores.first else { return false }
        try store.engine.fetch(fetch, expecting: begin, each: body)
        return true
    }

    static func mergeAcrossStores(_ rows: [(id: ObjectID, row: StoreRow)], fetch: StoreFetch) throws(CoherenceError) -> [(
        id: ObjectID, row: StoreRow
    )] {
        for key in fetch.sortKeys where !key.path.relationships.isEmpty {
            throw CoherenceError(
                .unsupportedPredicate,
                "Sorting by '\(key.path)' through a relationship is not supported when the entity spans several stores.",
                entity: fetch.entity.name)
        }
        var rows = rows
        let keys = fetch.sortKeys
        rows.sort { a, b in
            let ra = DetachedRow(id: a.id, row: a.row), rb = DetachedRow(id: b.id, row: b.row)
            if QueryEvaluator.areInIncreasingOrder(ra, rb, keys: keys) { return true }
            if QueryEvaluator.areInIncreasingOrder(rb, ra, keys: keys) { return false }
            return a.id.precedesInTieOrder(b.id)
        }
        var result = Array(rows.dropFirst(fetch.offset))
        if let limit = fetch.limit, result.count > limit { result = Array(result.prefix(limit)) }
        return result
    }

    /// The number of rows a compiled fetch matches across its stores (limit and offset applied).
    package func count(_ fetch: StoreFetch) throws(CoherenceError) -> Int {
        let stores = try readStores(for: fetch.entity)
        if stores.count == 1, let store = stores.first {
            return try store.engine.count(fetch)
        }
        var total = 0
        var unlimited = fetch
        unlimited.limit = nil
        unlimited.offset = 0
        for s in stores { total += try s.engine.count(unlimited) }
        let afterOffset = max(0, total - fetch.offset)
        return fetch.limit.map { min($0, afterOffset) } ?? afterOffset
    }

    /// Rows for object IDs (faults), from the row cache or the stores, each of its concrete
    /// entity. Missing rows are left out, and so are rows of another entity than the ID's (or
    /// one of its sub-entities): a Circle ID whose key is a Square's finds nothing. With a
    /// `generation`, rows are read from its snapshots, past the row cache (which holds rows
    /// as they are now).
    /// - Throws: `.storeNotAttached` for an ID of a store that is not attached (its rows are
    ///   not known to be gone); the store's error when reading fails.
    package func rows(for ids: [ObjectID], in generation: QueryGeneration? = nil) throws(CoherenceError) -> [ObjectID: StoreRow] {
        var result: [ObjectID: StoreRow] = [:]
        var missing: [UUID: [ObjectIdentifier: (EntityDescription, [Int64])]] = [:]
        for id in ids {
            guard let sid = id.storeIdentifier else { continue }
            if generation == nil, let (cached, e) = rowCache.entry(for: id) {
                // Cached under the row's concrete entity.
                guard cached.entity.isKindOf(id.entity) else { continue }
                result[id] = StoreRow(entity: cached.entity, primaryKey: id.primaryKey, version: e.version, values: e.values)
            } else {
                let entity = id.entity
                missing[sid, default: [:]][ObjectIdentifier(entity), default: (entity, [])].1.append(id.primaryKey)
            }
        }
        let queryGeneration = generation
        // Rows read before another process's commit dropped the store's rows are not cached.
        let generation = missing.isEmpty ? 0 : rowCache.generation
        for (sid, groups) in missing {
            guard let store = persistentStore(withIdentifier: sid) else {
                throw Self.detachedStoreError(sid, entity: groups.values.first?.0)
            }
            let snapshot = queryGeneration?.snapshot(of: sid)
            // A store whose configuration holds no entity of the hierarchy (an ID made from a
            // URI naming such an entity) holds no such row: it is gone, not unreadable.
            for (_, (entity, keys)) in groups where SQLGenerator.hierarchy(of: entity).contains(where: store.holds) {
                for row in try store.engine.rows(of: entity, keys: keys, in: snapshot) {
                    let id = ObjectID(entity: row.entity, storeIdentifier: sid, primaryKey: row.primaryKey)
                    result[id] = row
                    if queryGeneration == nil {
                        rowCache.store(.init(values: row.values, version: row.version), for: id, readAt: generation)
                    }
                }
            }
        }
        return result
    }

    /// The error for objects of a store that is not attached (their rows are not known to be gone).
    private static func detachedStoreError(_ store: UUID, entity: EntityDescription?) -> CoherenceError {
        CoherenceError(
            .storeNotAttached, "The store \(store.uuidString) is not attached to this coordinator, so its objects cannot be read.",
            entity: entity?.name, store: store.uuidString)
    }

    /// Destinations of a relationship for several objects (all in one query per store), as
    /// `generation` shows them (nil: as the stores are now).
    /// - Throws: `.storeNotAttached` for an ID of a store that is not attached.
    package func related(
        _ relationship: RelationshipDescription, of ids: [ObjectID], in generation: QueryGeneration? = nil
    ) throws(CoherenceError) -> [ObjectID: [ObjectID]] {
        // The callers' IDs by store and key, so results map back without scanning `ids` per row.
        var byStore: [UUID: [Int64: ObjectID]] = [:]
        for id in ids { if let sid = id.storeIdentifier { byStore[sid, default: [:]][id.primaryKey] = id } }
        guard let dest = relationship.destinationEntity, let model = dest.managedObjectModel else { return [:] }
        let byNumber = Dictionary(uniqueKeysWithValues: model.entities.map { ($0.entityNumber, $0) })
        var result: [ObjectID: [ObjectID]] = [:]
        for (sid, sources) in byStore {
            guard let store = persistentStore(withIdentifier: sid) else {
                throw Self.detachedStoreError(sid, entity: relationship.entity)
            }
            // A store without the destination entity (a model whose configurations split related
            // entities) holds no destinations: relationships never cross stores.
            guard store.holds(dest) else {
                for id in sources.values { result[id] = [] }
                continue
            }
            let related = try store.engine.related(relationship, sources: Array(sources.keys), in: generation?.snapshot(of: sid))
            for (source, targets) in related {
                guard let sourceID = sources[source] else { continue }
                result[sourceID] = targets.map {
                    ObjectID(entity: byNumber[$0.entityNumber] ?? dest, storeIdentifier: sid, primaryKey: $0.primaryKey)
                }
            }
        }
        return result
    }

    // MARK: Saving

    /// Writes a change set: each store's part in one transaction; all stores commit only when
    /// every store accepted its part. Conflicts come back as a `.conflict` error listing every
    /// conflict.
    package func save(_ changes: StoreChangeSet) throws(CoherenceError) -> StoreSaveResult {
        if changes.isEmpty { return StoreSaveResult() }
        // The bound on forgotten pins: after the save (outside the lock, so that the writer
        // never waits for a snapshot's reader), a generation idle too long is released.
        defer { queryGenerations.releaseIdle() }
        return try saveLock.withLock { () throws(CoherenceError) -> StoreSaveResult in
            let parts = try partition(changes)
            var begun: [PersistentStore] = []
            var result = StoreSaveResult()
            if parts.count > 1 {
                result.insertedIDs = changes.inserts.map(\.objectID)
                result.updatedVersions = Array(repeating: 0, count: changes.updates.count)
            }
            var conflicts: [SaveConflict] = []
            for part in parts {
                do throws(CoherenceError) {
                    let r = try part.store.engine.beginSave(part.changes)
                    begun.append(part.store)
                    if parts.count == 1 {
                        result = r
                    } else {
                        // Results come back aligned with the part; put them where the whole
                        // change set has them.
                        for (n, i) in part.insertIndexes.enumerated() where n < r.insertedIDs.count {
                            result.insertedIDs[i] = r.insertedIDs[n]
                        }
                        for (n, i) in part.updateIndexes.enumerated() where n < r.updatedVersions.count {
                            result.updatedVersions[i] = r.updatedVersions[n]
                        }
                    }
                } catch {
                    // (A `.conflict` that lists none — a constraint failed that no row of the
                    // model explains — fails the save like any error: its store wrote nothing.)
                    if error.code == .conflict && !error.conflicts.isEmpty {
                        conflicts += error.conflicts
                        continue
                    }
                    for s in begun { s.engine.rollbackSave() }
                    throw error
                }
            }
            if !conflicts.isEmpty {
                for s in begun { s.engine.rollbackSave() }
                var error = CoherenceError(.conflict, "The save has \(conflicts.count) conflict(s).")
                error.conflicts = conflicts
                throw error
            }
            try commit(begun)
            updateRowCache(changes, result)
            return result
        }
    }

    /// Commits the stores whose part of a save or batch request was written, in order; when one
    /// fails, the ones after it roll back and the error is thrown (the ones before it committed).
    /// The other writers of each store that committed hear of it (remote changes).
    ///
    /// Before the first COMMIT, every store after the first checks what its own COMMIT would
    /// check (``StoreEngine/prepareCommit()``: a PostgreSQL store's deferred constraints and
    /// triggers), and a failure rolls every store back. The first store needs no check, nor
    /// does a save of one store: when the first COMMIT fails, no store has committed and the
    /// others roll back. So a save of one store, the usual one, costs no extra statement; a
    /// save spanning stores one round trip per PostgreSQL store after the first. (The check
    /// cannot go with the COMMIT's predecessor, the commit notification: that is sent after the
    /// stores before it committed. Sending it with each save's last statements would cost
    /// every save a statement and hide that pipeline's conflicts behind the constraint's error;
    /// making the constraints immediate from `BEGIN` would refuse what the other program
    /// deferred them for, a row broken in the middle of the transaction and mended by its end.)
    func commit(_ begun: [PersistentStore]) throws(CoherenceError) {
        for s in begun.dropFirst() {
            do throws(CoherenceError) {
                try s.engine.prepareCommit()
            } catch {
                for s in begun { s.engine.rollbackSave() }
                throw error
            }
        }
        let hook = beforeCommitHook.withLock { $0 }
        for (i, s) in begun.enumerated() {
            hook?(s.identifier)
            do throws(CoherenceError) {
                try s.engine.commitSave()
            } catch {
                for later in begun[(i + 1)...] { later.engine.rollbackSave() }
                announceCommit(to: Array(begun[..<i]))
                throw error
            }
        }
        announceCommit(to: begun)
    }

    private func updateRowCache(_ changes: StoreChangeSet, _ result: StoreSaveResult) {
        // Only rows already cached are refreshed; with nothing cached there is nothing to do.
        guard !rowCache.isEmpty else { return }
        if !changes.deletes.isEmpty { rowCache.remove(changes.deletes.map(\.objectID)) }
        guard !changes.updates.isEmpty else { return }
        // Built only when an updated row refers to an object inserted by the same save.
        var permanent: [ObjectID: ObjectID]?
        var batch: [(id: ObjectID, entry: RowCache.Entry)] = []
        batch.reserveCapacity(changes.updates.count)
        var unresolvable: [ObjectID] = []
        for (u, v) in zip(changes.updates, result.updatedVersions) {
            var values = u.values
            var resolvable = true
            for r in u.references {
                guard let target = r.target else { values[r.slot] = .null; continue }
                var id = target
                if target.isTemporaryID {
                    if permanent == nil { permanent = result.permanentIDs(for: changes) }
                    id = permanent?[target] ?? target
                }
                if id.isTemporaryID { resolvable = false; break }
                values[r.slot] = .integer(id.primaryKey)
            }
            if resolvable {
                batch.append((u.objectID, RowCache.Entry(values: values, version: v)))
            } else {
                unresolvable.append(u.objectID)
            }
        }
        rowCache.update(batch)
        if !unresolvable.isEmpty { rowCache.remove(unresolvable) }
    }

    /// A store as errors name it: its file, "in-memory <UUID>", or a server store's URL without its password.
    package static func location(of store: PersistentStore) -> String {
        store.type.factory == nil ? store.url?.path ?? store.engine.locationDescription : store.engine.locationDescription
    }

    /// One store's part of a change set, with the positions its inserts and updates have in
    /// the whole change set.
    private struct SavePart {
        var store: PersistentStore
        var changes = StoreChangeSet()
        var insertIndexes: [Int] = []
        var updateIndexes: [Int] = []
    }

    /// Splits a change set by store.
    private func partition(_ changes: StoreChangeSet) throws(CoherenceError) -> [SavePart] {
        // One store holding every entity involved, and every existing object in it: no split.
        let attached = stores.withLock { $0 }
        if attached.count == 1, let only = attached.first, changes.assignedStores.isEmpty,
            // Through pointers: reading a row of the array would copy it (and retain its arrays);
            // and by the identifier's words, without making a `UUID` per row.
            changes.inserts.withUnsafeBufferPointer({ rows in
                rows.indices.allSatisfy { n in
                    let id = rows[n].objectID
                    return only.holds(id.entity) && (id.isTemporaryID || id.isStored(in: only.identifier))
                }
            }),
            // (Known without a pass over the rows when the context noted them as it built them.)
            changes.updates.isEmpty
                || changes.updatesAllStored(in: only.identifier)
                    ?? changes.updates.withUnsafeBufferPointer({ rows in
                        rows.indices.allSatisfy { rows[$0].objectID.isStored(in: only.identifier) }
                    }),
            changes.deletes.withUnsafeBufferPointer({ rows in rows.indices.allSatisfy { rows[$0].objectID.isStored(in: only.identifier) } })
        {
            return [SavePart(store: only, changes: changes)]
        }
        var parts: [UUID: SavePart] = [:]
        var order: [UUID] = []
        var insertedStore: [ObjectID: PersistentStore] = [:]
        func part(_ store: PersistentStore) -> UUID {
            if parts[store.identifier] == nil {
                var part = SavePart(store: store)
                part.changes.transactionAuthor = changes.transactionAuthor
                part.changes.contextName = changes.contextName
                parts[store.identifier] = part
                order.append(store.identifier)
            }
            return store.identifier
        }
        func existingStore(_ id: ObjectID) throws(CoherenceError) -> PersistentStore {
            guard let s = store(for: id) else {
                throw CoherenceError(.storeNotAttached, "The store of \(id) is not attached.", entity: id.entity.name, objectID: id)
            }
            return s
        }
        for (n, i) in changes.inserts.enumerated() {
            let store: PersistentStore
            if !i.objectID.isTemporaryID {
                store = try existingStore(i.objectID)
            } else {
                store = try self.store(forNew: i.objectID, assignedStores: changes.assignedStores)
            }
            insertedStore[i.objectID] = store
            let key = part(store)
            parts[key]?.changes.inserts.append(i)
            parts[key]?.insertIndexes.append(n)
        }
        // Relationships cannot cross stores: every destination must be in its source's store.
        // Checked before any store writes, so a refused save leaves every store as it was.
        func checkSameStore(
            _ source: ObjectID, in store: PersistentStore, _ target: ObjectID?,
            _ relationship: PropertyDescription
        ) throws(CoherenceError) {
            guard let target else { return }
            let targetStore: PersistentStore?
            if target.isTemporaryID {
                // Not inserted by this save: the store reports it.
                guard let inserted = insertedStore[target] else { return }
                targetStore = inserted
            } else {
                if target.isStored(in: store.identifier) { return }
                targetStore = self.store(for: target)
            }
            guard targetStore !== store else { return }
            let here = Self.location(of: store)
            let there = targetStore.map(Self.location) ?? "detached store \(target.storeIdentifier?.uuidString ?? "")"
            var error = CoherenceError(
                .crossStoreRelationship,
                "\(source.entity.name).\(relationship.name) relates \(source) in store \(here) to \(target) in store \(there); relationships cannot cross stores.",
                entity: source.entity.name, property: relationship.name, objectID: source, store: here)
            error.destinationStore = there
            throw error
        }
        for i in changes.inserts {
            guard let store = insertedStore[i.objectID] else { continue }
            for r in i.references { try checkSameStore(i.objectID, in: store, r.target, i.objectID.entity.properties[r.slot]) }
        }
        for (n, u) in changes.updates.enumerated() {
            let store = try existingStore(u.objectID)
            for r in u.references { try checkSameStore(u.objectID, in: store, r.target, u.objectID.entity.properties[r.slot]) }
            let key = part(store)
            parts[key]?.changes.updates.append(u)
            parts[key]?.updateIndexes.append(n)
        }
        for d in changes.deletes { parts[part(try existingStore(d.objectID))]?.changes.deletes.append(d) }
        for j in changes.joinInserts {
            let s: PersistentStore
            if let inserted = insertedStore[j.source] { s = inserted } else { s = try existingStore(j.source) }
            try checkSameStore(j.source, in: s, j.destination, j.relationship)
            parts[part(s)]?.changes.joinInserts.append(j)
        }
        for j in changes.joinDeletes {
            let s: PersistentStore
            if let inserted = insertedStore[j.source] { s = inserted } else { s = try existingStore(j.source) }
            parts[part(s)]?.changes.joinDeletes.append(j)
        }
        for o in changes.orders {
            let s: PersistentStore
            if let inserted = insertedStore[o.source] { s = inserted } else { s = try existingStore(o.source) }
            parts[part(s)]?.changes.orders.append(o)
        }
        return order.compactMap { parts[$0] }
    }
}

/// A row outside any store context (for ordering rows merged from several stores).
struct DetachedRow: QueryRow {
    let id: ObjectID
    let row: StoreRow
    var queryEntity: EntityDescription { row.entity }
    var queryObjectID: ObjectID { id }
    func queryValue(at slot: Int) -> StoredValue { slot < row.values.count ? row.values[slot] : .null }
    func queryToOne(_ relationship: RelationshipDescription) -> (any QueryRow)? { nil }
    func queryToMany(_ relationship: RelationshipDescription) -> [any QueryRow] { [] }
}
