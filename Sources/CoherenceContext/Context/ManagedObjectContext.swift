import Dispatch
import Foundation

/// A scratch pad of managed objects, as Core Data's `NSManagedObjectContext`.
///
/// A context tracks the objects you fetch, insert, change and delete, and writes the changes in
/// one ``save()``. Every context runs its work on its own executor:
///
/// - a **main-queue** context runs on the main queue (the main actor): use it for UI-facing
///   objects;
/// - a **private-queue** context has its own serial queue: use it for background work.
///
/// Use objects and the context only inside ``perform(schedule:_:)`` or ``performAndWait(_:)``
/// (a main-queue context may also be used directly on the main thread). Debug builds stop with
/// a message naming the context when a context or one of its objects is used off its executor.
///
/// ```swift
/// let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
/// let name = try await context.perform {
///     let ada = Person(context: context)
///     ada.name = "Ada"
///     try context.save()
///     return ada.name
/// }
/// ```
///
/// A context has either a coordinator (its saves go to the stores) or a parent context (its
/// saves go into the parent's memory; fetches see the parent's unsaved changes).
public class ManagedObjectContext: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: every mutable field is touched only on the context's executor (its
    // serial queue or the main queue), reached through perform/performAndWait and checked in
    // debug builds; the settings other threads may read are behind a lock.

    /// How a context runs its work.
    public struct ConcurrencyType: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable { case main, privateQueue }
        private let kind: Kind
        /// Work runs on the main queue (the main actor).
        public static let mainQueue = ConcurrencyType(kind: .main)
        /// Work runs on the context's own serial queue.
        public static let privateQueue = ConcurrencyType(kind: .privateQueue)
        /// `mainQueue` or `privateQueue`.
        public var description: String { kind == .main ? "mainQueue" : "privateQueue" }
    }

    /// When `perform(schedule:_:)` runs its block.
    public struct ScheduledTaskType: Hashable, Sendable {
        private enum Kind: Hashable, Sendable { case immediate, enqueued }
        private let kind: Kind
        /// Run at once when already on the context's executor, else enqueue.
        public static let immediate = ScheduledTaskType(kind: .immediate)
        /// Always enqueue, after the work already queued.
        public static let enqueued = ScheduledTaskType(kind: .enqueued)
        var isImmediate: Bool { kind == .immediate }
    }

    /// How the context runs its work.
    public let concurrencyType: ConcurrencyType
    /// The coordinator (a child context uses its parent's).
    public let persistentStoreCoordinator: PersistentStoreCoordinator
    /// The parent context, for a child context.
    public let parent: ManagedObjectContext?
    /// Where the context reads: its coordinator, its parent, or (pinned to a query generation)
    /// its coordinator through the generation. Changed only on the executor.
    @exclusivity(unchecked) package var source: any ContextSource
    let queue: DispatchQueue
    private let token: ContextToken
    /// What the context's objects point to: cleared in `deinit`, so an object that outlives its
    /// context sees no context rather than a dangling reference.
    package let handle = ContextHandle()
    private static let queueKey = DispatchSpecificKey<ContextToken>()
    /// Marks the main queue: on Linux, after `dispatch_main()`, main-queue work runs on a pool
    /// thread, so `Thread.isMainThread` alone cannot tell.
    private static let mainQueueKey: DispatchSpecificKey<ContextToken> = {
        let key = DispatchSpecificKey<ContextToken>()
        DispatchQueue.main.setSpecific(key: key, value: ContextToken())
        return key
    }()

    struct Settings {
        var name: String?
        var transactionAuthor: String?
        var mergePolicy: MergePolicy = .error
        var automaticallyMergesChangesFromParent = false
        /// The query generation the context reads (nil: unpinned); see
        /// ``ManagedObjectContext/setQueryGeneration(from:)``.
        var generationPin: QueryGenerationPin?
    }
    let settings: LockedValue<Settings>

    // Executor-confined state. `@exclusivity(unchecked)`: these are touched only on the
    // context's executor, and the run-time exclusivity checks cost more than the work itself on
    // hot paths.
    /// The identity map: every registered object except inserted objects that still have
    /// temporary IDs, which are found through `insertedList` (so inserting hashes nothing).
    package var registered: IdentityMap {
        @inline(__always) get { _registered }
        // Any change may make an object's cached to-one destination stale (see
        // `ObjectState.cachedToOne(slot:generation:)`).
        @inline(__always) _modify {
            yield &_registered
            handle.generation &+= 1
        }
        @inline(__always) set {
            _registered = newValue
            handle.generation &+= 1
        }
    }
    /// The identity map's storage: changes through it must bump `handle.generation` (as
    /// ``registered`` does), once per batch of changes at least.
    @exclusivity(unchecked) var _registered = IdentityMap()
    /// Inserted objects by temporary ID, built on the first lookup of a temporary ID and kept
    /// up to date on insert; entries are checked on use, so removals need not update it.
    @exclusivity(unchecked) var insertedIndex: [ObjectID: ManagedObject]?
    @exclusivity(unchecked) package var insertedList: [ManagedObject] = []
    /// Objects changed since the last save, in the order they were first changed (keyed by
    /// `ObjectIdentifier(object)`).
    @exclusivity(unchecked) package var updatedCandidates = OrderedObjects()
    @exclusivity(unchecked) package var deletedList: [ManagedObject] = []
    @exclusivity(unchecked) package var deletedSet: Set<ObjectIdentifier> = []
    @exclusivity(unchecked) var unfilledFaults: [ObjectIdentifier: [ManagedObject]] = [:]
    /// The stores inserted objects were assigned to (``assign(_:to:)``): store identifier by
    /// temporary ID. Usually empty.
    @exclusivity(unchecked) var assignedStores: [ObjectID: UUID] = [:]
    /// Objects whose data could not be loaded because reading failed (flagged `.loadFailed`,
    /// or `.inaccessible` once a retry found the row gone while edits were kept), by object.
    @exclusivity(unchecked) var unloaded: [ObjectIdentifier: UnloadedObject] = [:]
    /// Deleted objects whose delete rules ran without every destination (a relationship could
    /// not be read): the save completes them first.
    @exclusivity(unchecked) var pendingDeleteRules: [ManagedObject] = []
    /// To-many relationships replaced as a whole while they could not be read: the save loads
    /// them first, so the members they had leave (see `ToManyState.replacedWhileUnread`).
    @exclusivity(unchecked) var pendingReplaces: [(object: ManagedObject, relationship: RelationshipDescription)] = []
    @exclusivity(unchecked) package var pendingChanges = PendingChanges()
    @exclusivity(unchecked) var performDepth = 0
    @exclusivity(unchecked) var isSaving = false
    /// The inserted objects (and their IDs) the last ObjectsDidChange reported, for the save
    /// that posted it to reuse.
    @exclusivity(unchecked) var postedInserted: (ids: Set<ObjectID>, objects: Set<ManagedObject>)?
    /// Likewise the updated objects, with the list they were built from (in the order the
    /// objects were changed): the save reuses them when its own updated objects are that list.
    @exclusivity(unchecked) var postedUpdated: (ids: Set<ObjectID>, objects: Set<ManagedObject>, list: [ManagedObject])?
    /// Statistics for actions (counts and times of fetches and saves).
    @exclusivity(unchecked) package var statistics = ContextStatistics()
    let children = LockedValue<[WeakContext]>([])
    /// Permanent IDs that saves of an ancestor gave to objects this context may still hold
    /// under temporary IDs: noted at once, from the ancestor's executor, and applied at the
    /// start of this context's next save if the queued ``applyPermanentIDs(_:)`` has not run by
    /// then (the child saves, the parent saves, the child saves again, in one block).
    let pendingPermanentIDs = LockedValue<[ObjectID: ObjectID]>([:])
    let broadcaster = EventBroadcaster()

    /// Hooks a container's strategy installs: what to do after a save, and where errors raised
    /// while propagating changes go.
    package struct Hooks: Sendable {
        package var didSave: (@Sendable (ContextEvent) -> Void)?
        /// Called at once, on the thread that met the error (a container's handler records the
        /// error and passes it on from a global queue).
        package var errorHandler: (@Sendable (any Error) -> Void)?
        /// A child context whose saves a root context writes later checks at save that every
        /// change has an attached store to go to, so that a save into a store that was
        /// detached fails at once instead of in the root context.
        package var checksStoresOnSave = false
        /// Called with every error met while loading an object's data (after it is logged).
        package var loadErrorObserver: (@Sendable (CoherenceError) -> Void)?
        /// Asked by a save that has changes, before anything is written or pushed: an error
        /// refuses the save (a read-only or temporary context of a container), which throws it
        /// and leaves the stores and the context's changes as they were.
        package var saveRefusal: (@Sendable () -> CoherenceError?)?
    }
    private let hookStorage = LockedValue(Hooks())
    /// The strategy hooks.
    package var hooks: Hooks {
        get { hookStorage.withLock { $0 } }
        set { hookStorage.withLock { $0 = newValue } }
    }

    /// Reports an error raised while propagating changes (never thrown at an unrelated caller):
    /// to the strategy's error handler when there is one, else through ``CoherenceLogging``.
    package func reportPropagationError(_ error: any Error) {
        if let handler = hooks.errorHandler {
            handler(error)
        } else {
            CoherenceLogging.log(.error, "context", "error while propagating changes into '\(name ?? "unnamed")': \(error)")
        }
    }

    /// Creates a context whose saves go to `coordinator`'s stores.
    public init(concurrencyType: ConcurrencyType, coordinator: PersistentStoreCoordinator, name: String? = nil) {
        self.concurrencyType = concurrencyType
        self.persistentStoreCoordinator = coordinator
        self.parent = nil
        self.source = coordinator
        self.settings = LockedValue(Settings(name: name))
        self.token = ContextToken()
        self.queue = concurrencyType == .mainQueue ? .main : DispatchQueue(label: "Coherence.context.\(name ?? "private")")
        if concurrencyType != .mainQueue { queue.setSpecific(key: Self.queueKey, value: token) } else { _ = Self.mainQueueKey }
        // Not in the coordinator's registry until it merges automatically (see
        // `automaticallyMergesChangesFromParent`): a weak reference gives an object a side table,
        // and every later retain of the context would go through it.
        handle.context = self
    }

    /// Creates a child context whose saves go into `parent`.
    public init(concurrencyType: ConcurrencyType, parent: ManagedObjectContext, name: String? = nil) {
        self.concurrencyType = concurrencyType
        self.persistentStoreCoordinator = parent.persistentStoreCoordinator
        self.parent = parent
        self.source = ParentSource(parent: parent)
        self.settings = LockedValue(Settings(name: name))
        self.token = ContextToken()
        self.queue = concurrencyType == .mainQueue ? .main : DispatchQueue(label: "Coherence.context.\(name ?? "child")")
        if concurrencyType != .mainQueue { queue.setSpecific(key: Self.queueKey, value: token) } else { _ = Self.mainQueueKey }
        parent.children.withLock { list in
            list.removeAll { $0.context == nil }
            list.append(WeakContext(self))
        }
        handle.context = self
    }

    deinit { handle.context = nil }

    /// The context's name, concurrency type and whether it is a child, for diagnostics.
    public var description: String {
        "<ManagedObjectContext \(name ?? "unnamed") \(concurrencyType)\(parent != nil ? " child" : "")>"
    }

    // MARK: Settings

    /// A name for diagnostics, recorded in persistent history as the
    /// ``PersistentHistoryTransaction/contextName`` of the context's saves.
    public var name: String? {
        get { settings.withLock { $0.name } }
        set { settings.withLock { $0.name = newValue } }
    }

    /// The author recorded with this context's saves: in their did-save events, and in
    /// persistent history as each transaction's ``PersistentHistoryTransaction/author`` (kept
    /// until changed, as in Core Data). A child context's saves are recorded when its root context
    /// saves them, with the root's author.
    public var transactionAuthor: String? {
        get { settings.withLock { $0.transactionAuthor } }
        set { settings.withLock { $0.transactionAuthor = newValue } }
    }

    /// How save conflicts are resolved. Default: ``MergePolicy/error``.
    public var mergePolicy: MergePolicy {
        get { settings.withLock { $0.mergePolicy } }
        set { settings.withLock { $0.mergePolicy = newValue } }
    }

    /// Whether saves are merged into this context automatically, as Core Data's property: a
    /// root context (whose parent is the coordinator) merges saves of the other contexts on its
    /// coordinator; a child context merges saves pushed into its parent by sibling contexts, saves
    /// of its parent and merges its parent received. Only registered objects are refreshed
    /// (keeping this context's unsaved edits); inserted objects are announced by ID. Saves of other
    /// coordinators or processes and batch requests are not merged automatically. Each merge
    /// moves a context pinned to a query generation to the current state
    /// (``setQueryGeneration(from:)``). Default `false`.
    ///
    /// Off, a child context still fetches through its parent (it finds what the parent saved);
    /// only its registered objects keep the values they were loaded with.
    public var automaticallyMergesChangesFromParent: Bool {
        get { settings.withLock { $0.automaticallyMergesChangesFromParent } }
        set {
            settings.withLock { $0.automaticallyMergesChangesFromParent = newValue }
            // A root context that merges other contexts' saves subscribes to its coordinator's
            // saves (children are found through their parent).
            if newValue && parent == nil { persistentStoreCoordinator.subscribe(self) }
        }
    }

    /// The model.
    public var managedObjectModel: ManagedObjectModel { persistentStoreCoordinator.managedObjectModel }

    // MARK: Executor

    /// Whether the current code runs on this context's executor.
    public var isOnExecutor: Bool {
        if concurrencyType == .mainQueue {
            return DispatchQueue.getSpecific(key: Self.mainQueueKey) != nil || Thread.isMainThread
        }
        // (A block of this context's further down the thread's stack, with another context's
        // block in between, holds the executor too.)
        return DispatchQueue.getSpecific(key: Self.queueKey) === token || HeldExecutors.holds(token)
    }

    /// Stops (in debug builds) when the context is used off its executor.
    @usableFromInline
    package func assertOnExecutor(touching object: ManagedObject? = nil, _ function: StaticString = #function) {
        #if DEBUG
        if !isOnExecutor {
            let what = object.map { "object \($0.objectID) of " } ?? ""
            preconditionFailure(
                "Coherence: \(what)ManagedObjectContext '\(name ?? "unnamed")' (\(concurrencyType)) used off its executor in \(function); use perform or performAndWait"
            )
        }
        #endif
    }

    /// Runs `block` on the context's executor and returns its value.
    ///
    /// With `.immediate` (the default) the block runs at once when the caller is already on the
    /// executor; otherwise it is enqueued.
    ///
    /// ```swift
    /// let count = try await context.perform { try context.count(for: FetchRequest<Person>()) }
    /// ```
    public func perform<T, E: Error>(
        schedule: ScheduledTaskType = .immediate,
        _ block: sending @escaping () throws(E) -> sending T
    ) async throws(E) -> T {
        if schedule.isImmediate && isOnExecutor {
            return try run(block)
        }
        // Invariant: the block runs once, on the executor; its result crosses back once, through
        // the continuation, which is resumed exactly once.
        nonisolated(unsafe) let work = block
        let result: Result<T, E> = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
            queue.async {
                nonisolated(unsafe) let r = self.run { () -> Result<T, E> in
                    do throws(E) { return .success(try work()) } catch { return .failure(error) }
                }
                continuation.resume(returning: r)
            }
        }
        return try result.get()
    }

    /// Enqueues `block` on the context's executor and returns at once.
    ///
    /// In async functions `await perform { … }` picks the async overload, which returns the
    /// block's value; in top-level script code, annotate the result type
    /// (`let n: Int = await context.perform { … }`) to get it.
    @_disfavoredOverload
    public func perform(_ block: sending @escaping () -> Void) {
        // Invariant: the block (sent by the caller) runs once, on the executor.
        nonisolated(unsafe) let work = block
        queue.async { self.run(work) }
    }

    /// Runs `block` on the context's executor and waits for it. Re-entrant: calling it from the
    /// executor runs the block at once, also from another context's block called from this
    /// one's (`parent.performAndWait { child.performAndWait { try child.fetch(request) } }`).
    public func performAndWait<T, E: Error>(_ block: () throws(E) -> T) throws(E) -> T {
        if isOnExecutor { return try run(block) }
        let result: Result<T, E> = withoutActuallyEscaping(block) { escapable in
            // Invariant: the caller waits (`queue.sync`) while the block runs on the executor.
            nonisolated(unsafe) let work = escapable
            return queue.sync {
                self.run { () -> Result<T, E> in
                    do throws(E) { return .success(try work()) } catch { return .failure(error) }
                }
            }
        }
        return try result.get()
    }

    /// Runs work on the executor, posting pending change notifications when the outermost block ends.
    @inline(__always)
    func run<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try HeldExecutors.holding(token) { () throws(E) -> T in try runHeld(body) }
    }

    @inline(__always)
    private func runHeld<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        performDepth += 1
        let start = performDepth == 1 ? DispatchTime.now().uptimeNanoseconds : 0
        defer {
            performDepth -= 1
            if performDepth == 0 {
                statistics.performTime += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                processPendingChanges()
            }
        }
        return try body()
    }

    // MARK: Registration

    /// The object for an ID: the registered one, or a new fault. Touching a fault whose row is
    /// gone leaves it with default values and marks it inaccessible (``existingObject(with:)->ManagedObject``
    /// checks first). Touching one whose row cannot be read (store detached, damaged file)
    /// leaves it a fault and reports the error; ``ManagedObject/fulfillFault()`` throws it.
    public func object(with id: ObjectID) -> ManagedObject {
        assertOnExecutor()
        return _object(for: id)
    }

    /// The object for an ID, loaded and checked to exist. An object this context deleted and
    /// has not saved yet is still the context's: it is returned (with `isDeleted` true), as
    /// Core Data returns an object the context knows.
    /// - Throws: `.objectNotFound` when the object does not exist, or when the ID's key names an
    ///   object of another entity (a Circle ID whose key is a Square's); the error reading it met
    ///   when it cannot be read (`.storeNotAttached`, `.storeReadFailed`, …).
    public func existingObject(with id: ObjectID) throws(CoherenceError) -> ManagedObject {
        assertOnExecutor()
        if let o = lookup(id), !o.entity.isKindOf(id.entity) && !id.entity.isKindOf(o.entity), !o.isInserted {
            // It may be a stand-in `object(with:)` made for an ID naming another entity of the
            // hierarchy (a Square ID with a Circle's key): read, it has no row, and the row is
            // looked for under this ID's entity.
            if o._state.flags.contains(.fault) && !o._state.flags.contains(.prefilled) { _fulfill(o) }
            if o._state.flags.contains(.inaccessible) && unloaded[ObjectIdentifier(o)] == nil { registered[id] = nil }
        }
        if let o = lookup(id) {
            // IDs of one hierarchy are equal by key: the registered object may be a sibling's.
            if !o.entity.isKindOf(id.entity) && !id.entity.isKindOf(o.entity) {
                throw CoherenceError(
                    .objectNotFound, "No \(id.entity.name) has the key of \(o.objectID).", entity: id.entity.name, objectID: id)
            }
            // This context's own unsaved delete: the object is still the context's.
            if o.isDeleted && deletedSet.contains(ObjectIdentifier(o)) { return o }
            // A row found gone is looked for again (a permanent ID handed out before its save
            // names a row once the save is done), unless edits made meanwhile are kept for it.
            if o.isDeleted || (o._state.flags.contains(.inaccessible) && unloaded[ObjectIdentifier(o)] != nil) {
                throw CoherenceError(.objectNotFound, "\(id) was deleted.", entity: id.entity.name, objectID: id)
            }
            let loaded = !o.isFault || o._state.flags.contains(.prefilled) || o.isInserted
            if loaded && !o._state.flags.contains(.inaccessible) { return o }
        }
        let found: ObjectSnapshot?
        do throws(CoherenceError) {
            // A temporary ID names no row, but a child reads its ancestors' unsaved objects.
            found = id.isTemporaryID && parent == nil ? nil : try source.sourceSnapshots(for: [id])[id]
        } catch {
            if let o = lookup(id) {
                _noteLoadFailure(o, error)
                throw Self.naming(o, in: error)
            }
            throw Self.naming(id, in: error)
        }
        guard let snapshot = found else {
            throw CoherenceError(.objectNotFound, "No object with ID \(id) exists.", entity: id.entity.name, objectID: id)
        }
        if let o = lookup(id) {
            if o._state.flags.contains(.inaccessible) { o._state.markRowBack() }
            o._install(snapshot, asFault: false, keepRelations: true)
            o.awakeFromFetch()
            return o
        }
        let o = materialize(snapshot, asFault: false, group: nil)
        o.awakeFromFetch()
        return o
    }

    /// The registered object for an ID, without loading anything.
    public func registeredObject(for id: ObjectID) -> ManagedObject? {
        assertOnExecutor()
        return lookup(id)
    }

    /// The registered object for an ID: from the identity map, or an inserted object by its
    /// temporary ID.
    @inline(__always)
    func lookup(_ id: ObjectID) -> ManagedObject? {
        if let o = registered[id] { return o }
        return id.isTemporaryID ? insertedObject(withTemporaryID: id) : nil
    }

    /// An inserted (unsaved) object by its temporary ID.
    private func insertedObject(withTemporaryID id: ObjectID) -> ManagedObject? {
        if insertedIndex == nil {
            var index: [ObjectID: ManagedObject] = [:]
            index.reserveCapacity(insertedList.count)
            for o in insertedList { if let oid = o._objectID, oid.isTemporaryID { index[oid] = o } }
            insertedIndex = index
        }
        guard let o = insertedIndex?[id], o.isInserted, o._objectID == id, o._context === self else { return nil }
        return o
    }

    /// Adds an object to `insertedList` (and to the temporary-ID index when it exists).
    func appendInserted(_ object: ManagedObject) {
        insertedList.append(object)
        if insertedIndex != nil, let id = object._objectID, id.isTemporaryID { insertedIndex?[id] = object }
    }

    /// Every registered object, inserted ones included.
    var allRegisteredObjects: [ManagedObject] {
        var all = Array(registered.values)
        for o in insertedList where o._objectID?.isTemporaryID ?? true { all.append(o) }
        return all
    }

    /// Every object registered in the context.
    public var registeredObjects: Set<ManagedObject> {
        assertOnExecutor()
        return Set(allRegisteredObjects)
    }

    /// The registered object, or a new fault for `id`.
    package func _object(for id: ObjectID) -> ManagedObject {
        if let o = lookup(id) {
            // Not a stand-in of another entity of the hierarchy found to have no row (see
            // `existingObject(with:)`): the ID's own entity may have one.
            guard o.entity !== id.entity, !o.entity.isKindOf(id.entity), !id.entity.isKindOf(o.entity), !o.isInserted,
                o._state.flags.contains(.inaccessible), unloaded[ObjectIdentifier(o)] == nil
            else { return o }
            registered[id] = nil
        }
        // An object inserted here that an ancestor's save just made permanent.
        if parent != nil, !id.isTemporaryID, pendingPermanentIDs.withLock({ !$0.isEmpty }) {
            applyPendingPermanentIDs()
            if let o = lookup(id) { return o }
        }
        let entity = id.entity
        if !entity.subentities.isEmpty {
            // A relationship to a parent entity: the snapshot knows the concrete entity. When it
            // cannot be read, a fault of the entity named stands in (the error is reported).
            do throws(CoherenceError) {
                if let snapshot = try source.sourceSnapshots(for: [id])[id] { return materialize(snapshot, asFault: true, group: nil) }
            } catch {
                reportLoadError(Self.naming(id, in: error))
            }
        }
        let o = entity.managedObjectClass.init(entity: entity)
        o._objectID = id
        o._state.beginFault()
        o._context = self
        registered[id] = o
        unfilledFaults[ObjectIdentifier(entity.rootEntity), default: []].append(o)
        return o
    }

    /// Creates and registers an object from a snapshot.
    @inline(__always)
    package func materialize(_ snapshot: ObjectSnapshot, asFault: Bool, group: FetchGroup?) -> ManagedObject {
        let o = snapshot.id.entity.managedObjectClass.init(entity: snapshot.id.entity)
        o._objectID = snapshot.id
        o._context = self
        o._install(snapshot, asFault: asFault)
        group?.add(o)
        registered[snapshot.id] = o
        return o
    }

    /// Fills a fault, loading a batch of other unfilled faults of the same entity hierarchy in
    /// the same query. Returns false when the row could not be read: the object stays a fault
    /// and the error is kept and reported (see ``_noteLoadFailure(_:_:)``).
    @discardableResult
    package func _fulfill(_ object: ManagedObject) -> Bool {
        do throws(CoherenceError) {
            try _fill(object)
            return true
        } catch {
            _noteLoadFailure(object, error)
            return false
        }
    }

    /// Fills a fault (see ``_fulfill(_:)``), throwing when its row cannot be read.
    private func _fill(_ object: ManagedObject) throws(CoherenceError) {
        let root = ObjectIdentifier(object.entity.rootEntity)
        var batch: [ManagedObject] = [object]
        // An object whose last load failed is retried alone (it fails on every access until its
        // store is back).
        if !object._state.flags.contains(.loadFailed), var pending = unfilledFaults[root] {
            while batch.count < 512, let o = pending.popLast() {
                if o !== object && o._state.flags.contains(.fault) && !o._state.flags.contains(.prefilled) && o._context === self {
                    batch.append(o)
                }
            }
            unfilledFaults[root] = pending.isEmpty ? nil : pending
        }
        let ids = batch.map(\.objectID)
        let start = DispatchTime.now().uptimeNanoseconds
        let snapshots: [ObjectID: ObjectSnapshot]
        do throws(CoherenceError) {
            snapshots = try source.sourceSnapshots(for: ids)
        } catch {
            guard batch.count > 1 else { throw error }
            // Another object of the batch may be the one that cannot be read (its store
            // detached): the others go back to wait, and the object is read alone.
            unfilledFaults[root, default: []].append(contentsOf: batch.dropFirst())
            batch = [object]
            snapshots = try source.sourceSnapshots(for: [object.objectID])
        }
        statistics.fetchTime += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        statistics.fetchedRows += snapshots.count
        for o in batch {
            if let s = snapshots[o.objectID] {
                o._install(s, asFault: o !== object, keepRelations: true)
            } else if o === object {
                o._state.markRowGone()
                // Edits made while it could not be loaded stay listed: the save reports them.
                if unloaded[ObjectIdentifier(o)]?.editedSlots.isEmpty == true { unloaded[ObjectIdentifier(o)] = nil }
            }
        }
    }

    /// Registers faults for a to-one relationship's destinations across the object's whole
    /// fetch group (once per group), so firing one of them fills the others in the same query.
    package func _registerGroupDestinations(_ r: RelationshipDescription, of object: ManagedObject) {
        // A destination entity with subentities needs a query per fault to find its concrete
        // entity: leave those to be made one at a time.
        guard let group = object._group, !group.loadedSlots.contains(r.slot), r.fkOrdinal >= 0,
            r.destinationEntity?.subentities.isEmpty == true
        else { return }
        group.loadedSlots.insert(r.slot)
        // Unmanaged: the group lists only live sources and the identity map keeps the
        // destinations alive, and nothing is released or unregistered here, so the pairs need
        // no retain and release each.
        var destinations: [(source: Unmanaged<ManagedObject>, destination: Unmanaged<ManagedObject>)] = []
        destinations.reserveCapacity(group.objects.capacityHint)
        // The group's distinct destinations: usually few, so this small map stays in cache
        // where lookups in the whole identity map would not.
        var distinct: [ObjectID: ManagedObject] = [:]
        // Sources read from rows of `object`'s store name their destination by key alone: look
        // those up by key, without making an ObjectID per source.
        var byKey: [KeyOnly: ManagedObject] = [:]
        let store = object._objectID?.storeIdentifier
        let destinationEntity = r.destinationEntity
        for o in group.objects where o !== object && o._contextHandle === handle && o.entity.isKindOf(r.entity ?? o.entity) {
            if o._state.committedToOne == nil, let destinationEntity, let committed = o._state.committedValue(at: r.slot),
                o._objectID?.storeIdentifier == store
            {
                guard case .integer(let key) = committed else { continue }
                if let d = byKey[KeyOnly(key)] {
                    destinations.append((.passUnretained(o), .passUnretained(d)))
                } else {
                    let d = _object(for: ObjectID(entity: destinationEntity, storeIdentifier: store, primaryKey: key))
                    byKey[KeyOnly(key)] = d
                    destinations.append((.passUnretained(o), .passUnretained(d)))
                }
                continue
            }
            guard let id = o._committedToOneID(r) else { continue }
            if let d = distinct[id] {
                destinations.append((.passUnretained(o), .passUnretained(d)))
            } else {
                let d = _object(for: id)
                distinct[id] = d
                destinations.append((.passUnretained(o), .passUnretained(d)))
            }
        }
        // Registering is over: remember each source's destination, so reading it needs no lookup.
        let generation = handle.generation
        for pair in destinations {
            pair.source._withUnsafeGuaranteedRef { o in
                if o._state.relation(at: r.slot) == nil {
                    pair.destination._withUnsafeGuaranteedRef { d in o._state.cacheToOne(d, slot: r.slot, generation: generation) }
                }
            }
        }
    }

    /// IDs of a relationship's destinations, loading the relationship for the object's whole
    /// fetch group in one query; throws when they cannot be read (nothing is marked loaded).
    package func _loadRelatedIDs(_ r: RelationshipDescription, of object: ManagedObject) throws(CoherenceError) -> [ObjectID] {
        var sources: [ManagedObject] = [object]
        var group: FetchGroup?
        if let g = object._group, !g.loadedSlots.contains(r.slot) {
            group = g
            g.loadedSlots.insert(r.slot)
            for o in g.objects where o !== object && o._context === self && !o.isInserted && o.entity.isKindOf(r.entity ?? o.entity) {
                if r.isToMany {
                    if case .toMany(let m)? = o._state.relation(at: r.slot), m.objects != nil { continue }
                } else if o._state.relation(at: r.slot) != nil {
                    continue
                }
                sources.append(o)
            }
        }
        // Temporary IDs are read from a parent, which holds the objects it inserted.
        let ids = sources.compactMap { $0._objectID }.filter { !$0.isTemporaryID || parent != nil }
        guard !ids.isEmpty else { return [] }
        let start = DispatchTime.now().uptimeNanoseconds
        let related: [ObjectID: [ObjectID]]
        do throws(CoherenceError) {
            related = try source.sourceRelated(r, of: ids)
        } catch {
            group?.loadedSlots.remove(r.slot)  // the next read loads the group again
            // Another member may be the one that cannot be read (its store detached): the
            // object is read alone.
            guard sources.count > 1, let id = object._objectID, !id.isTemporaryID else { throw error }
            sources = [object]
            related = try source.sourceRelated(r, of: [id])
        }
        statistics.fetchTime += Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        for o in sources where o !== object {
            let targets = related[o.objectID] ?? []
            if r.isToMany {
                o._fill(o._toManyState(r, load: false), of: r, with: targets, in: self)
            } else {
                o._setRelationState(.toOne(targets.first.map { _object(for: $0) }), at: r.slot)
            }
        }
        return related[object.objectID] ?? []
    }

    // MARK: Inserting and deleting

    /// Inserts a new object (one not yet in any context).
    public func insert(_ object: ManagedObject) {
        assertOnExecutor()
        guard object._context == nil else {
            precondition(object._context === self, "\(object.objectID) already belongs to another context")
            return
        }
        object._context = self
        object._state.beginInserted()
        // A temporary ID: the object is found through insertedList. An object inserted again
        // after a rollback keeps the permanent ID `obtainPermanentIDs(for:)` gave it, and is
        // registered under it, as `obtainPermanentIDs(for:)` registers it (unless another
        // object is: its row's, when an object of a reset context is inserted again).
        let id = object.objectID
        if !id.isTemporaryID && registered[id] == nil { registered[id] = object }
        appendInserted(object)
        pendingChanges.inserted.append(object)
        object.awakeFromInsert()
    }

    /// Creates and inserts a new object of the named entity.
    /// - Throws: `.unknownEntity`.
    @discardableResult
    public func insertNewObject(forEntityName name: String) throws(CoherenceError) -> ManagedObject {
        guard let entity = managedObjectModel.entitiesByName[name] else {
            throw CoherenceError(.unknownEntity, "The model has no entity named '\(name)'.", entity: name)
        }
        guard !entity.isAbstract else {
            throw CoherenceError(.unknownEntity, "Entity '\(name)' is abstract.", entity: name)
        }
        let o = entity.managedObjectClass.init(entity: entity)
        insert(o)
        return o
    }

    /// Deletes an object. Delete rules apply at once: cascade deletes destinations, nullify
    /// removes the object from inverses; deny is checked at save.
    public func delete(_ object: ManagedObject) {
        assertOnExecutor()
        guard object._context === self, !object.isDeleted else { return }
        let key = ObjectIdentifier(object)
        let isInserted = object._state.flags.contains(.inserted)
        // An unsaved object is marked deleted after its delete rules run, but listed before: a
        // cascade that comes back to it (a partner that is its own inverse, two objects that
        // cascade to each other) stops there.
        if isInserted { guard pendingChanges.deleted.updateValue(object, forKey: key) == nil else { return } }
        object._willAccess()
        object.prepareForDeletion()
        if isInserted {
            // Deleting an unsaved object just forgets it (after applying delete rules).
            applyDeleteRules(object)
            insertedList.removeAll { $0 === object }
            if !object.objectID.isTemporaryID { registered[object.objectID] = nil }
            object._state.markDeleted()
            return
        }
        object._state.markDeleted()
        deletedList.append(object)
        deletedSet.insert(key)
        if !updatedCandidates.isEmpty { updatedCandidates.remove(object) }
        pendingChanges.deleted[key] = object
        applyDeleteRules(object)
    }

    /// Applies an object's delete rules (again, harmlessly, for one whose rules ran without
    /// every destination; see `pendingDeleteRules`).
    func applyDeleteRules(_ object: ManagedObject) {
        for r in object.entity.relationships where !r.isTransient {
            switch r.deleteRule.kind {
            case .cascade:
                for d in object._relatedObjects(at: r.slot) where !d.isDeleted { delete(d) }
                nullify(object, r)
            case .nullify:
                nullify(object, r)
            case .deny, .noAction:
                break
            }
        }
        if object.entity.relationships.contains(where: { deleteRuleMissedDestinations($0, of: object) }) {
            pendingDeleteRules.append(object)
        }
    }

    /// Removes `object` from the inverse of its relationship `r` in each of its destinations.
    func nullify(_ object: ManagedObject, _ r: RelationshipDescription) {
        guard let inverse = r.inverseRelationship else { return }
        for d in object._relatedObjects(at: r.slot) {
            if inverse.isToMany {
                d._primitiveRemove(object, from: inverse)
            } else if d._toOne(inverse) === object {
                d._primitiveSetToOne(inverse, nil)
            }
        }
    }

    // MARK: Change sets

    /// Objects inserted and not yet saved.
    public var insertedObjects: Set<ManagedObject> {
        assertOnExecutor()
        return Set(insertedList)
    }

    /// Objects with unsaved changes (not inserted or deleted).
    public var updatedObjects: Set<ManagedObject> {
        assertOnExecutor()
        return Set(updatedCandidates.values.filter { $0.isUpdated })
    }

    /// Objects deleted and not yet saved.
    public var deletedObjects: Set<ManagedObject> {
        assertOnExecutor()
        return Set(deletedList)
    }

    /// Whether the context has unsaved changes.
    public var hasChanges: Bool {
        assertOnExecutor()
        return !insertedList.isEmpty || !deletedList.isEmpty || updatedCandidates.values.contains { $0.isUpdated }
    }

    /// The stores the context's unsaved changes would be written to: those of updated and
    /// deleted objects, and the stores inserted objects are assigned to (or would be: the first
    /// attached store holding their entity). Used before a store is detached.
    ///
    /// - Complexity: O(*n*) in the number of changed objects; one store lookup per entity.
    package func storesWithChanges() -> Set<UUID> {
        assertOnExecutor()
        var result: Set<UUID> = []
        var byEntity: [ObjectIdentifier: UUID?] = [:]
        func note(_ o: ManagedObject) {
            if let sid = o.objectID.storeIdentifier ?? assignedStores[o.objectID] {
                result.insert(sid)
                return
            }
            let key = ObjectIdentifier(o.entity)
            if byEntity[key] == nil { byEntity[key] = persistentStoreCoordinator.stores(for: o.entity).first?.identifier }
            if let sid = byEntity[key] ?? nil { result.insert(sid) }
        }
        insertedList.forEach(note)
        deletedList.forEach(note)
        for o in updatedCandidates.values where o.isUpdated { note(o) }
        return result
    }

    package func _noteUpdated(_ object: ManagedObject) {
        updatedCandidates.insert(object)
        // The flag says the object is already listed for the next ObjectsDidChange.
        if object._state.markPendingUpdate() { pendingChanges.updated.append(object) }
    }

    /// Drops the changes not yet posted (clearing the objects' pending-update flags).
    func discardPendingChanges() {
        pendingChanges.updated.forEachBorrowed { $0._state.clearPendingUpdate() }
        pendingChanges = PendingChanges()
    }

    /// Permanent IDs for inserted objects, before they are saved: each in the store it was
    /// assigned to (``assign(_:to:)``), else in the first attached store that holds its entity.
    /// - Throws: `.contextMismatch` when an object is not in this context (nothing changes);
    ///   errors of the stores.
    public func obtainPermanentIDs(for objects: [ManagedObject]) throws(CoherenceError) {
        assertOnExecutor()
        // Another context's object would be registered here, and its own context lose track of it.
        if let stranger = objects.first(where: { $0._context !== self }) {
            throw CoherenceError(
                .contextMismatch, "\(stranger.objectID) is not in the context '\(name ?? "unnamed")'.",
                entity: stranger.entity.name, objectID: stranger.objectID)
        }
        let temporary = objects.filter { $0.objectID.isTemporaryID }
        guard !temporary.isEmpty else { return }
        // (A child gets keys from the store through the coordinator too.)
        let ids = try persistentStoreCoordinator.obtainPermanentIDs(for: temporary.map(\.objectID), assignedStores: assignedStores)
        for (o, id) in zip(temporary, ids) { rekey(o, to: id) }
    }

    /// Chooses the store an inserted object is saved in, as Core Data's `assign(_:to:)`.
    ///
    /// Needed only when several attached stores hold the object's entity: without it, a new
    /// object goes to the first attached store (in the order they were added) that holds its
    /// entity. The choice holds until the object is saved (through a parent context too) or its
    /// context rolls back or resets; a related object is not moved with it, and relating objects
    /// of two stores fails at save (`.crossStoreRelationship`).
    ///
    /// ```swift
    /// let archive = try coordinator.addPersistentStore(type: .sqlite, at: archiveURL)
    /// let note = Note(context: context)
    /// try context.assign(note, to: archive)
    /// try context.save()   // the note's row is in the archive's file
    /// ```
    /// - Throws: `.contextMismatch` when the object is not in this context; `.invalidRequest`
    ///   when it is not inserted or already has a permanent ID (it is in a store by then);
    ///   `.storeNotAttached` when the store is not attached to the context's coordinator;
    ///   `.noStoreForEntity` when the store's configuration does not hold the object's entity.
    public func assign(_ object: ManagedObject, to store: PersistentStore) throws(CoherenceError) {
        assertOnExecutor()
        let entity = object.entity
        guard object._context === self else {
            throw CoherenceError(
                .contextMismatch, "\(object.objectID) is not in the context '\(name ?? "unnamed")'.",
                entity: entity.name, objectID: object.objectID)
        }
        let id = object.objectID
        guard object.isInserted, id.isTemporaryID else {
            throw CoherenceError(
                .invalidRequest,
                "Only an inserted object with a temporary ID can be assigned to a store; \(id) is \(object.isInserted ? "already in a store" : "not inserted").",
                entity: entity.name, objectID: id)
        }
        let location = PersistentStoreCoordinator.location(of: store)
        guard persistentStoreCoordinator.persistentStores.contains(where: { $0 === store }) else {
            throw CoherenceError(
                .storeNotAttached, "\(id) cannot be assigned to a store that is not attached to the context's coordinator.",
                entity: entity.name, objectID: id, store: location)
        }
        guard store.holds(entity) else {
            throw CoherenceError(
                .noStoreForEntity,
                "\(id) cannot be assigned to the store: its configuration '\(store.configurationName ?? ManagedObjectModel.defaultConfigurationName)' does not hold entity '\(entity.name)'.",
                entity: entity.name, objectID: id, store: location)
        }
        assignedStores[id] = store.identifier
    }

    /// Changes an object's ID (temporary → permanent) in the identity map.
    func rekey(_ object: ManagedObject, to id: ObjectID) {
        // An inserted object with a temporary ID is not in the identity map.
        // Registered again at once, so it stays in its fetch group (another object registered
        // under the old ID would not be, and leaves its group).
        if let old = object._objectID, !(old.isTemporaryID && object.isInserted),
            let removed = registered.remove(old, leavingGroup: false), removed !== object
        {
            removed._leaveGroup()
        }
        object._objectID = id
        registered[id] = object
    }

    // MARK: Resetting

    /// Forgets every registered object and unsaved change. A context pinned to a query
    /// generation moves to the current state (pinned at its next read).
    public func reset() {
        assertOnExecutor()
        for o in registered.values {
            o._context = nil
            o._leaveGroup()
            o._state.dropRelations()
            o._state.forgetCachedToOne()
        }
        for o in insertedList where o._context === self {
            o._context = nil
            o._leaveGroup()
            o._state.dropRelations()
        }
        registered = IdentityMap()
        insertedIndex = nil
        insertedList = []
        updatedCandidates = [:]
        deletedList = []
        deletedSet = []
        unfilledFaults = [:]
        assignedStores = [:]
        unloaded = [:]
        pendingDeleteRules = []
        pendingReplaces = []
        discardPendingChanges()
        pendingChanges.invalidatedAll = true
        advanceQueryGeneration()
        processPendingChanges()
    }

    /// Discards unsaved changes: inserted objects are forgotten, deleted ones restored and
    /// updated ones return to their last saved values.
    public func rollback() {
        assertOnExecutor()
        for o in insertedList {
            if !o.objectID.isTemporaryID { registered[o.objectID] = nil }
            o._context = nil
            o._state.clearFlags()
            pendingChanges.invalidated[ObjectIdentifier(o)] = o
        }
        for o in deletedList { o._state.unmarkDeleted() }
        if !unloaded.isEmpty { discardUnloadedEdits() }
        pendingDeleteRules = []
        pendingReplaces = []
        var touched = Array(updatedCandidates.values) + deletedList
        // Objects whose relationships changed through inverses are candidates too.
        touched += registered.values.filter { $0._state.relations != nil && !touched.contains($0) }
        insertedIndex = nil
        for o in touched where o._context === self {
            o._state.rollBack()
            pendingChanges.refreshed[ObjectIdentifier(o)] = o
        }
        insertedList = []
        updatedCandidates = [:]
        deletedList = []
        deletedSet = []
        assignedStores = [:]
        processPendingChanges()
    }

    /// Turns an object back into a fault (dropping its unsaved changes), or with
    /// `mergeChanges: true` reloads it and re-applies its unsaved changes.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        assertOnExecutor()
        guard object._context === self, !object.isInserted else { return }
        let key = ObjectIdentifier(object)
        if mergeChanges {
            let changed = object.isFault ? [:] : changedSlots(object)
            let relations = object._state.relations
            let found: ObjectSnapshot?
            do throws(CoherenceError) {
                found = try source.sourceSnapshots(for: [object.objectID])[object.objectID]
            } catch {
                // Not readable: the object stays as it is (a fault stays one, without data), and
                // the error is reported.
                if object._state.flags.contains(.fault) && !object._state.flags.contains(.prefilled) {
                    _noteLoadFailure(object, error)
                } else {
                    reportLoadError(Self.naming(object, in: error))
                }
                return
            }
            guard let snapshot = found else { return }
            object._install(snapshot, asFault: false)
            for (slot, value) in changed { object._state.setValue(value, at: slot) }
            // Keep locally changed to-one relationships; to-many ones reload with their
            // unsaved edits kept over what is stored.
            if let relations {
                for (slot, state) in relations {
                    switch state {
                    case .toOne: object._setRelationState(state, at: slot)
                    case .toMany(let m):
                        if let edits = m.unsavedEdits(registered: lookup) { object._setRelationState(.toMany(edits), at: slot) }
                    }
                }
            }
        } else {
            forgetLoadFailure(object)
            object._state.turnIntoFault()
            updatedCandidates.remove(object)
            if deletedSet.contains(key) {
                deletedSet.remove(key)
                deletedList.removeAll { $0 === object }
                object._state.unmarkDeleted()
            }
            unfilledFaults[ObjectIdentifier(object.entity.rootEntity), default: []].append(object)
        }
        pendingChanges.refreshed[key] = object
    }

    /// Refreshes every registered object (turning unchanged ones into faults) and keeps
    /// unsaved changes.
    ///
    /// A context pinned to ``QueryGenerationToken/current`` (see
    /// ``setQueryGeneration(from:)``) first moves to the current generation, so the objects
    /// read the stores as they are now; one pinned to another context's token keeps reading
    /// that snapshot.
    ///
    /// ```swift
    /// for await _ in coordinator.remoteChanges {
    ///     await viewContext.perform { viewContext.refreshAllObjects() }
    /// }
    /// ```
    public func refreshAllObjects() {
        assertOnExecutor()
        advanceQueryGenerationIfFollowingCurrent()
        for o in registered.values where !o.isInserted {
            refresh(o, mergeChanges: o.hasChanges)
        }
    }

    /// Attribute slots whose values differ from the committed snapshot.
    func changedSlots(_ o: ManagedObject) -> [Int: StoredValue] {
        var result: [Int: StoredValue] = [:]
        guard let committed = o._state.committedValues() else { return result }
        let values = o._state.values
        for a in o.entity.attributes where !a.isTransient && values[a.slot] != committed[a.slot] {
            result[a.slot] = values[a.slot]
        }
        return result
    }
}

extension ManagedObject {
    /// Creates an object and inserts it into `context`.
    ///
    /// The class must be the class of exactly one entity of the context's model (a programming
    /// error otherwise, as in Core Data); for models built in code use
    /// ``ManagedObjectContext/insertNewObject(forEntityName:)``.
    public convenience init(context: ManagedObjectContext) {
        guard let entity = context.managedObjectModel.entity(for: Self.self) else {
            preconditionFailure("\(Self.self) is not the class of an entity of the context's model; use insertNewObject(forEntityName:)")
        }
        self.init(entity: entity)
        context.insert(self)
    }
}
