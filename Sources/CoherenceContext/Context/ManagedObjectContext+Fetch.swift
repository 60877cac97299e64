import Dispatch
import Foundation

extension ManagedObjectContext {
    /// The objects a request matches.
    ///
    /// Unsaved changes are included (``FetchRequest/includesPendingChanges``): inserted objects
    /// that match are returned, deleted ones are not, and updated ones are matched on their
    /// current values, with the same predicate evaluated in memory.
    ///
    /// ```swift
    /// let adults = try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age >= 18 }))
    /// ```
    ///
    /// - Throws: `.noStoreForEntity` when no attached store holds the entity (also with no
    ///   store at all, and in a child context), as a save of it does: never an empty answer
    ///   about data the context cannot see. Errors of the request and the stores.
    public func fetch<T: ManagedObject>(_ request: FetchRequest<T>) throws(CoherenceError) -> [T] {
        assertOnExecutor()
        let fetch = try request.storeFetch(in: managedObjectModel)
        if !request.relationshipKeyPathsForPrefetching.isEmpty {
            try Self.checkPrefetching(request.relationshipKeyPathsForPrefetching, of: fetch.entity)
        }
        var commonClass: ObjectIdentifier?
        let objects = try fetchObjects(
            fetch, includesPendingChanges: request.includesPendingChanges,
            asFaults: request.returnsObjectsAsFaults,
            prefetching: request.relationshipKeyPathsForPrefetching, commonClass: &commonClass)
        // The registration saw every object's class as it made it; otherwise one pass checks.
        if commonClass == ObjectIdentifier(T.self) || objects.allSatisfy({ type(of: $0) == T.self }) {
            // Every object is exactly a T (checked above, a pointer comparison each): the array
            // buffer is reinterpreted, as the standard library's array downcast does once it has
            // checked the elements, instead of copied.
            return objects.unsafelyCastElements(to: T.self)
        }
        return objects.compactMap { $0 as? T }
    }

    /// Checks that each key path to prefetch names relationships, from `entity` on.
    /// - Throws: `.unknownKey` naming the first that does not.
    private static func checkPrefetching(_ paths: [String], of entity: EntityDescription) throws(CoherenceError) {
        for path in paths {
            var current: EntityDescription? = entity
            for name in path.split(separator: ".", omittingEmptySubsequences: false) {
                guard let r = current?.relationshipsByName[String(name)] else {
                    throw CoherenceError(
                        .unknownKey,
                        "'\(path)' in relationshipKeyPathsForPrefetching is not a key path of relationships of '\(entity.name)'.",
                        entity: entity.name, property: path)
                }
                current = r.destinationEntity
            }
        }
    }

    /// The IDs of the objects a request matches (unsaved changes included).
    /// - Throws: as ``fetch(_:)->[T]``.
    public func fetchObjectIDs<T: ManagedObject>(_ request: FetchRequest<T>) throws(CoherenceError) -> [ObjectID] {
        assertOnExecutor()
        let fetch = try request.storeFetch(in: managedObjectModel)
        if !request.includesPendingChanges || pendingObjects(for: fetch).isEmpty, parent == nil, source === persistentStoreCoordinator {
            return try persistentStoreCoordinator.fetchObjectIDs(request)
        }
        return try fetchObjects(fetch, includesPendingChanges: request.includesPendingChanges, asFaults: true, prefetching: []).map(
            \.objectID)
    }

    /// The number of objects a request matches (unsaved changes included).
    /// - Throws: as ``fetch(_:)->[T]``.
    public func count<T: ManagedObject>(for request: FetchRequest<T>) throws(CoherenceError) -> Int {
        assertOnExecutor()
        let fetch = try request.storeFetch(in: managedObjectModel)
        if !request.includesPendingChanges || pendingObjects(for: fetch).isEmpty {
            let start = DispatchTime.now().uptimeNanoseconds
            defer { statistics.fetchTime += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }
            return try source.sourceCount(fetch)
        }
        return try fetchObjects(fetch, includesPendingChanges: true, asFaults: true, prefetching: []).count
    }

    /// Objects with unsaved changes that could affect a fetch of `fetch.entity`.
    package func pendingObjects(for fetch: StoreFetch) -> [ManagedObject] {
        if insertedList.isEmpty && deletedList.isEmpty && updatedCandidates.isEmpty { return [] }
        func relevant(_ o: ManagedObject) -> Bool {
            fetch.includesSubentities ? o.entity.isKindOf(fetch.entity) : o.entity === fetch.entity
        }
        return insertedList.filter(relevant) + deletedList.filter(relevant) + updatedCandidates.values.filter(relevant)
    }

    /// Runs a compiled fetch and returns registered objects.
    package func fetchObjects(
        _ fetch: StoreFetch, includesPendingChanges: Bool, asFaults: Bool,
        prefetching: [String]
    ) throws(CoherenceError) -> [ManagedObject] {
        var commonClass: ObjectIdentifier?
        return try fetchObjects(
            fetch, includesPendingChanges: includesPendingChanges, asFaults: asFaults,
            prefetching: prefetching, commonClass: &commonClass)
    }

    /// Runs a compiled fetch and returns registered objects; `commonClass` is set to the class
    /// of every result when the fetch knows them all to share it (nil otherwise).
    func fetchObjects(
        _ fetch: StoreFetch, includesPendingChanges: Bool, asFaults: Bool,
        prefetching: [String], commonClass: inout ObjectIdentifier?
    ) throws(CoherenceError) -> [ManagedObject] {
        commonClass = nil
        // Rows an ancestor saved since this block began are found under their permanent IDs.
        if parent != nil { applyPendingPermanentIDs() }
        let pending = includesPendingChanges ? pendingObjects(for: fetch) : []
        var storeFetch = fetch
        if !pending.isEmpty {
            storeFetch.limit = nil
            storeFetch.offset = 0
        }
        let start = DispatchTime.now().uptimeNanoseconds
        let group = FetchGroup()
        // Rows become objects as the source reads them.
        var registration = RowRegistration(context: self, asFaults: asFaults, group: group)
        do throws(CoherenceError) {
            try source.sourceFetch(storeFetch, into: &registration)
        } catch {
            registration.abandon()
            throw error
        }
        if pending.isEmpty && prefetching.isEmpty { commonClass = registration.commonClass }
        let results = registration.finish()
        statistics.fetchTime += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        statistics.fetchedRows += results.count

        if !pending.isEmpty {
            return try finishFetch(
                mergePending(results, pending: pending, fetch: fetch), group: group, fetch: fetch, prefetching: prefetching)
        }
        return try finishFetch(results, group: group, fetch: fetch, prefetching: prefetching)
    }

    /// Prefetches relationships of a fetch's results.
    private func finishFetch(
        _ results: [ManagedObject], group: FetchGroup, fetch: StoreFetch,
        prefetching: [String]
    ) throws(CoherenceError) -> [ManagedObject] {
        for path in prefetching {
            // A key path through several relationships prefetches its first one.
            let name = path.split(separator: ".", maxSplits: 1).first.map(String.init) ?? path
            guard let r = fetch.entity.relationshipsByName[name], let first = results.first(where: { $0._group === group }) else {
                continue
            }
            _ = first._relatedObjects(at: r.slot)
            // Load the destinations too (their faults fill in batches), so reading them needs no query.
            for o in group.objects {
                let destinations: [ManagedObject]
                switch o._state.relation(at: r.slot) {
                case .toMany(let m)?: destinations = m.objects ?? []
                case .toOne(let d)?: destinations = d.map { [$0] } ?? []
                case nil:
                    let id = r.hasForeignKey ? o._committedToOneID(r) : nil
                    destinations = id.flatMap { registered[$0] }.map { [$0] } ?? []
                }
                for d in destinations where d._state.flags.contains(.fault) && !d._state.flags.contains(.prefilled) { d._willAccess() }
            }
        }
        return results
    }

    /// Applies unsaved changes to store results: drops deleted objects, re-matches changed ones,
    /// adds matching inserted ones, then sorts and limits in memory.
    private func mergePending(_ stored: [ManagedObject], pending: [ManagedObject], fetch: StoreFetch) -> [ManagedObject] {
        let predicate = fetch.predicate
        func matches(_ o: ManagedObject) -> Bool { predicate.map { QueryEvaluator.matches($0, row: o) } ?? true }
        let changed = Set(pending.map(ObjectIdentifier.init))
        var results = stored.filter { o in
            !o.isDeleted && (!changed.contains(ObjectIdentifier(o)) || matches(o))
        }
        var seen = Set(results.map(ObjectIdentifier.init))
        for o in pending where !o.isDeleted && !seen.contains(ObjectIdentifier(o)) && matches(o) {
            results.append(o)
            seen.insert(ObjectIdentifier(o))
        }
        if !fetch.sortKeys.isEmpty {
            let keys = fetch.sortKeys
            results.sort { a, b in
                if QueryEvaluator.areInIncreasingOrder(a, b, keys: keys) { return true }
                if QueryEvaluator.areInIncreasingOrder(b, a, keys: keys) { return false }
                return Self.tieOrder(a.objectID, b.objectID)
            }
        } else if fetch.offset > 0 || fetch.limit != nil {
            // No sort descriptor: a limit or offset counts in tie order, as the stores' own
            // answer does (which, read without them, came in no particular order).
            results.sort { Self.tieOrder($0.objectID, $1.objectID) }
        }
        if fetch.offset > 0 { results = Array(results.dropFirst(fetch.offset)) }
        if let limit = fetch.limit, results.count > limit { results = Array(results.prefix(limit)) }
        return results
    }

    /// How ties of a sorted fetch are broken, as the stores break them: saved objects by store
    /// and primary key (``PersistentStoreCoordinator/mergeAcrossStores(_:fetch:)``), then
    /// inserted ones in the order they were made. (Not by their place in the store's answer,
    /// which for an object changed since follows its saved values.)
    static func tieOrder(_ a: ObjectID, _ b: ObjectID) -> Bool {
        if a.isTemporaryID != b.isTemporaryID { return b.isTemporaryID }
        return a.precedesInTieOrder(b)
    }

    /// A snapshot of an object's current state (for a child context).
    func currentSnapshot(_ o: ManagedObject) -> ObjectSnapshot {
        o._willAccess()
        let toOne = o.entity.foreignKeyRelationships.map { o._currentToOneID($0) }
        return ObjectSnapshot(id: o.objectID, values: o._state.values, version: o._state.version, toOne: toOne)
    }
}

/// A parent context seen as the source of a child context: the child's reads go through the
/// parent's executor and see its unsaved changes.
final class ParentSource: ContextSource, @unchecked Sendable {
    // @unchecked Sendable: holds only the parent context, which is Sendable; all reads happen
    // inside the parent's performAndWait.
    let parent: ManagedObjectContext

    init(parent: ManagedObjectContext) { self.parent = parent }

    func sourceFetch(_ fetch: StoreFetch) throws(CoherenceError) -> [ObjectSnapshot] {
        let parent = self.parent
        return try parent.performAndWait { () throws(CoherenceError) -> [ObjectSnapshot] in
            let objects = try parent.fetchObjects(fetch, includesPendingChanges: true, asFaults: false, prefetching: [])
            return objects.map { parent.currentSnapshot($0) }
        }
    }

    func sourceFetch(_ fetch: StoreFetch, into registration: inout RowRegistration) throws(CoherenceError) {
        var snapshots = try sourceFetch(fetch)
        registration.begin(expectedRows: snapshots.count)
        snapshots.reverse()  // taken from the end, in fetch order, so each snapshot's values move
        while let snapshot = snapshots.popLast() { registration.add(snapshot) }
    }

    func sourceCount(_ fetch: StoreFetch) throws(CoherenceError) -> Int {
        let parent = self.parent
        return try parent.performAndWait { () throws(CoherenceError) -> Int in
            if parent.pendingObjects(for: fetch).isEmpty { return try parent.source.sourceCount(fetch) }
            return try parent.fetchObjects(fetch, includesPendingChanges: true, asFaults: true, prefetching: []).count
        }
    }

    func sourceSnapshots(for ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: ObjectSnapshot] {
        let parent = self.parent
        return try parent.performAndWait { () throws(CoherenceError) -> [ObjectID: ObjectSnapshot] in
            var result: [ObjectID: ObjectSnapshot] = [:]
            for id in ids {
                // A temporary ID the parent does not hold is an ancestor's unsaved object, or
                // names nothing: read it from the parent's own source, without making a fault
                // under it here.
                if id.isTemporaryID && parent.lookup(id) == nil {
                    if parent.parent != nil, let snapshot = try parent.source.sourceSnapshots(for: [id])[id] {
                        result[id] = snapshot
                    }
                    continue
                }
                let o = parent._object(for: id)
                if o.isDeleted { continue }
                do throws(CoherenceError) {
                    try o.fulfillFault()
                } catch {
                    // A row that is gone is left out; one that cannot be read is an error.
                    if o._state.flags.contains(.inaccessible) { continue }
                    throw error
                }
                result[id] = parent.currentSnapshot(o)
            }
            return result
        }
    }

    func sourceRelated(_ relationship: RelationshipDescription, of ids: [ObjectID]) throws(CoherenceError) -> [ObjectID: [ObjectID]] {
        let parent = self.parent
        return try parent.performAndWait { () throws(CoherenceError) -> [ObjectID: [ObjectID]] in
            var result: [ObjectID: [ObjectID]] = [:]
            for id in ids {
                // A temporary ID the parent no longer holds (it saved the object and the new ID
                // has not reached this context yet) names no object there: nothing to read, and
                // no fault to make under it.
                if id.isTemporaryID && parent.lookup(id) == nil {
                    result[id] = []
                    continue
                }
                let o = parent._object(for: id)
                if !o.isInserted && !o.isDeleted && !o._state.flags.contains(.inaccessible) {
                    try o.fulfillFault(forRelationshipNamed: relationship.name)
                }
                result[id] = o._relatedObjects(at: relationship.slot).filter { !$0.isDeleted }.map(\.objectID)
            }
            return result
        }
    }
}

/// Registers a fetch's objects as the context's source reads them (see
/// ``ContextSource/sourceFetch(_:into:)``): rows of one store, rows of several, or a parent
/// context's snapshots. Each new object takes its row's values and joins the identity map
/// while it is still in the processor's cache. Existing objects are reused (and filled when
/// they are unfilled faults). `finish()` runs `awakeFromFetch` in fetch order and returns the
/// objects in fetch order; `abandon()`, when the fetch fails part-way, takes the objects it
/// made out of the identity map again.
///
/// The identity map stays in the context throughout: code that runs while rows are read (a
/// subclass's `init(entity:)`) sees every registered object.
package struct RowRegistration: ~Copyable {
    let context: ManagedObjectContext
    let asFaults: Bool
    let group: FetchGroup
    let handle: ContextHandle
    /// Whether the identity map held objects before this fetch (otherwise every object is new,
    /// and every result is awoken, so no separate list is kept).
    let mayBeRegistered: Bool
    /// A row came twice (a join can repeat a row): the results list its object twice.
    var sawRepeatedRow = false
    /// Objects that code run during a fetch into an empty map (a subclass's initializer, by a
    /// lookup or a fetch of its own) registered under IDs this fetch's rows then named: the
    /// rows' objects, but not made by this fetch. A failed fetch leaves them registered, and
    /// `finish()` awakes only those this fetch filled.
    var foreign: [ManagedObject] = []
    var results: [ManagedObject] = []
    /// The new objects, when some rows may be registered already (otherwise: `results`).
    var newObjects: [ManagedObject] = []
    /// Objects to awake (or prefilled faults to fire) once registered, in fetch order, when
    /// some rows may be registered already.
    var awaken: [(object: ManagedObject, fire: Bool)] = []
    /// The class of every result when they all have the same one (nil: none yet, or mixed), so
    /// the typed fetch needs no pass over the objects to check it.
    var commonClass: ObjectIdentifier?
    var mixedClasses = false
    /// The number of rows the store expected (0: no estimate).
    var expected = 0
    /// The entity of the last object made and its class: looked up once per entity, not per row.
    var classEntity: EntityDescription?
    var entityClass: ManagedObject.Type = ManagedObject.self

    init(context: ManagedObjectContext, asFaults: Bool, group: FetchGroup) {
        self.context = context
        self.asFaults = asFaults
        self.group = group
        self.handle = context.handle
        self.mayBeRegistered = !context.registered.isEmpty
        context.handle.generation &+= 1  // for the insertions below, made through `_registered`
    }

    /// Learns how many rows the source expects, before the first row: the result
    /// list makes room for them once, instead of growing; so do the identity map and the fetch
    /// group when the map is empty (every row is then a new object; a fetch into a map that
    /// holds objects may find its rows registered already, and reserving for them would double
    /// the map). Each growth of the map moves every entry. `finish()` gives back what an
    /// estimate that was too high reserved.
    package mutating func begin(expectedRows: Int) {
        guard expectedRows > 0 else { return }
        expected = expectedRows
        results.reserveCapacity(expectedRows)
        if !mayBeRegistered {
            context.registered.reserveCapacity(expectedRows)
            group.reserveCapacity(expectedRows)
        }
    }

    /// Registers a row read by a store: its ID, version and values (see ``RowReceiver``).
    package mutating func add(_ id: consuming ObjectID, version: Int64, values: consuming [StoredValue]) {
        register(id, values: values, version: version, toOne: nil)
    }

    /// Registers a row with its ID (rows of several stores).
    package mutating func add(_ row: consuming StoreRow, id: ObjectID) {
        register(id, values: exchange(&row.values, with: []), version: row.version, toOne: nil)
    }

    /// Registers an object's snapshot (a parent context's object).
    package mutating func add(_ snapshot: consuming ObjectSnapshot) {
        register(snapshot.id, values: exchange(&snapshot.values, with: []), version: snapshot.version, toOne: snapshot.toOne)
    }

    /// Registers the object of `id` with a row's values (moved into a new object), version and
    /// committed to-one destinations (nil: the ones its foreign keys name).
    ///
    /// A new object takes the ID and the values as they come (moved, not copied): the ID's
    /// reference to the entity becomes the object's `_objectID`'s, and the object's `entity`
    /// is the one other reference a row adds.
    @inline(__always)
    private mutating func register(_ id: consuming ObjectID, values: consuming [StoredValue], version: Int64, toOne: [ObjectID?]?) {
        let hash = IdentityMap.hash(id)
        if mayBeRegistered, let o = context._registered.object(for: id, hash: hash) {
            if o.entity === id.entity || id.entity.isKindOf(o.entity) || o.isInserted {
                reuse(o, id: id, values: &values, version: version, toOne: toOne)
                return
            }
            // Registered under this key is an object of another entity of the hierarchy: a
            // stand-in that `object(with:)` made for an ID naming the wrong entity (a Square
            // ID with a Circle's key), which has no row. The row gets its own object.
            context._registered.remove(id)
        }
        if id.entity !== classEntity {
            classEntity = id.entity
            entityClass = id.entity.managedObjectClass
        }
        let objectClass = entityClass
        // (The entity read from the ID in place: a local copy would cost a retain and a release.)
        let o = objectClass.init(entity: id.entity)
        // Registered, unless an object is registered under this ID by now: the initializer that
        // just ran registered it (through a lookup or a fetch of its own), or the row came
        // before (stores list each row once; this keeps one object if one did not). That one
        // is the row's object then, and the new one is discarded as it is: with the row's ID
        // but its entity's initial values, in no context or group, so code that still reads it
        // (its `deinit`, or an initializer that kept `self`) reads defaults.
        if let registered = context._registered.insertIfAbsent(o, for: id, hash: hash, settingID: false) {
            o._objectID = id
            reuse(registered, id: id, values: &values, version: version, toOne: toOne)
            return
        }
        // The ID moves in (the map's entry is under it from here on); unless the initializer
        // asked for an ID, there is none to release.
        if o._objectID == nil { o._objectID = consume id } else { o._objectID = consume id }
        // A new object is in no context or group (unless its initializer did something odd).
        o._contextHandle = handle
        if o._groupReference == nil { group.add(o) }
        // The row's values move in. The committed snapshot lists no change, which needs no
        // second reference to the values (an atomic retain per row) and lets the first change
        // edit them in place.
        o._state.install(values, toOne: toOne, version: version, asFault: asFaults, keepRelations: false)
        noteClass(ObjectIdentifier(objectClass))
        if mayBeRegistered {
            newObjects.append(o)
            if !asFaults { awaken.append((o, false)) }
        }
        results.append(consume o)
    }

    /// A row whose object is registered already.
    private mutating func reuse(_ o: ManagedObject, id: ObjectID, values: inout [StoredValue], version: Int64, toOne: [ObjectID?]?) {
        if !mayBeRegistered {
            // Into an empty map: a row this fetch read before (its object is in this fetch's
            // group), or an object registered meanwhile by code the fetch ran.
            if o._groupReference?.toOpaque() == Unmanaged.passUnretained(group).toOpaque() {
                sawRepeatedRow = true
            } else {
                foreign.append(o)
            }
        }
        let flags = o._state.flags
        if flags.contains(.fault) && !flags.contains(.prefilled) && !flags.contains(.inserted) {
            let snapshot = ObjectSnapshot(id: id, values: exchange(&values, with: []), version: version, toOne: toOne)
            o._install(snapshot, asFault: asFaults, keepRelations: true)
            if !asFaults { awaken.append((o, false)) }
        } else if flags.contains(.fault) && !flags.contains(.inserted) && !flags.contains(.loadFailed) {
            // A prefilled fault holds the values of an earlier read, which nobody has seen yet:
            // it takes this row's, which may be newer (another context saved since), so that
            // the object reads what the fetch matched, as a Core Data fault would.
            let snapshot = ObjectSnapshot(id: id, values: exchange(&values, with: []), version: version, toOne: toOne)
            o._install(snapshot, asFault: true, keepRelations: true)
            if !asFaults { awaken.append((o, true)) }
        } else if flags.contains(.fault) && !asFaults {
            awaken.append((o, true))  // a prefilled fault: a non-faulting fetch realizes it
        }
        if o._groupReference == nil { group.add(o) }
        noteClass(ObjectIdentifier(type(of: o)))
        results.append(o)
    }

    @inline(__always)
    private mutating func noteClass(_ c: ObjectIdentifier) {
        if c != commonClass {
            if commonClass == nil && !mixedClasses { commonClass = c } else { commonClass = nil; mixedClasses = true }
        }
    }

    /// Takes the objects made for the rows read so far out of the identity map again, when
    /// the fetch fails part-way (they were never returned or awoken).
    consuming func abandon() {
        let notMade = Set(foreign.map(ObjectIdentifier.init))
        for o in mayBeRegistered ? newObjects : results
        where o._group === group && o._contextHandle === handle && !notMade.contains(ObjectIdentifier(o)) {
            if let id = o._objectID, context.registered[id] === o { context.registered[id] = nil }
            o._contextHandle = nil
        }
    }

    consuming func finish() -> [ManagedObject] {
        if expected > 2 * results.count + 16 {
            // Far fewer rows than expected (the same SQL with other bound values, or rows
            // deleted since): give back the room reserved for the others.
            results = results.copiedToFit()
            group.trimCapacity()
            if !mayBeRegistered { context.registered.shrinkIfSparse() }
        }
        #if DEBUG
        context.registered._checkInvariants()
        #endif
        /// Awakes the objects this fetch filled and realizes the prefilled faults it returns.
        func awakeListed(_ awaken: [(object: ManagedObject, fire: Bool)]) {
            for (o, fire) in awaken {
                if fire { if o._state.flags.contains(.fault) { o._fireFault() } } else { o.awakeFromFetch() }
            }
        }
        if mayBeRegistered {
            awakeListed(awaken)
        } else if !asFaults {
            if sawRepeatedRow || !foreign.isEmpty {
                // Each object this fetch made once; of the others, those it filled or realized.
                var awoken = Set(foreign.map(ObjectIdentifier.init))
                for o in results where awoken.insert(ObjectIdentifier(o)).inserted { o.awakeFromFetch() }
                awakeListed(awaken)
            } else {
                results.forEachBorrowed { $0.awakeFromFetch() }
            }
        }
        return results
    }
}
