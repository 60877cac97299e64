import Foundation

/// Keeps the results of a fetch request in step with a context, in sections, and reports each
/// change (Core Data's `NSFetchedResultsController`).
///
/// After ``performFetch()`` the controller follows every change its context sees — its own
/// inserts, edits and deletes (announced when the outermost `perform` block ends, or by
/// `processPendingChanges()`), saves, merges of other contexts' saves, of persistent history
/// and of batch requests, refreshes, rollbacks and resets — and reports each as a
/// ``FetchedResultsDifference``, on the context's executor: to its ``delegate`` and as a
/// ``FetchedResultsSnapshot`` to every ``snapshots`` stream.
///
/// Unlike Core Data's controller, it also reports objects the context had not loaded: when a
/// merge names an object that is not registered in the context (inserted or changed by another
/// context, coordinator or process), the controller reads it and reports it if it now matches
/// the request.
///
/// ```swift
/// var request = FetchRequest<Person>(predicate: #Predicate { $0.age >= 18 }, sortBy: [SortDescriptor(\.name)])
/// let controller = try FetchedResultsController(fetchRequest: request, context: viewContext,
///                                               sectionNameKeyPath: \.initial)
/// try controller.performFetch()
/// for section in controller.sections { print(section.name, section.numberOfObjects) }
/// Task {
///     for await snapshot in controller.snapshots { print(snapshot.difference) }
/// }
/// ```
///
/// Use the controller on its context's executor (inside `perform`, or on the main thread for a
/// main-queue context); ``snapshots`` and ``snapshot`` may be read anywhere.
///
/// The request needs at least one sort descriptor. With a section key path, the first sort
/// descriptor must order the sections (objects of one section must be contiguous), as in Core
/// Data. A request whose predicate or sort descriptors read related objects, or that has a
/// ``FetchRequest/fetchOffset``, is fetched again after each change the context sees (a related
/// object's change can change the results); otherwise changes are applied to the results in
/// memory, reading only the objects that changed.
public final class FetchedResultsController<ResultType: ManagedObject>: @unchecked Sendable {
    // @unchecked Sendable: the results and settings are touched only on the context's executor
    // (checked in debug builds); the latest snapshot and the snapshot streams are behind a lock.

    typealias Row = ResultRow

    /// The request. Changes take effect at the next ``performFetch()``.
    public var fetchRequest: FetchRequest<ResultType>
    /// The context whose objects the controller reports.
    public let managedObjectContext: ManagedObjectContext
    /// The section name of an object, from the section key path (nil: one section named "").
    let sectionName: ((ResultType) -> String)?
    /// Receives the changes, on the context's executor (held weakly).
    public weak var delegate: (any FetchedResultsControllerDelegate<ResultType>)?

    /// The results, in order, and their sections.
    var rows: [Row] = []
    var layout = SectionLayout()
    /// The compiled request of the last ``performFetch()`` (nil before).
    var compiled: StoreFetch?
    /// The request of the last ``performFetch()``, which changes are fetched again with (a
    /// request set since takes effect at the next ``performFetch()``).
    var fetchedRequest: FetchRequest<ResultType>?
    var order = RowOrder(keys: [])
    /// Whether each change is applied by fetching again (see the type's discussion).
    var refetchesOnChange = false
    var observers: [any NSObjectProtocol] = []
    /// Notifications that arrived while changes were being reported (handled after them).
    var queued: [Notification] = []
    var isReporting = false
    /// Called on the context's executor after each change, with the new snapshot (the
    /// `@Observable` form listens here).
    var changeHandlers: [(FetchedResultsSnapshot) -> Void] = []
    /// How many snapshots ``publish(_:toDelegate:)`` has published: a delegate callback that
    /// fetches again (`performFetch()`) publishes one, which makes the snapshot being reported
    /// stale.
    var publications = 0

    struct Shared {
        var latest: FetchedResultsSnapshot?
        var streams: [UUID: AsyncStream<FetchedResultsSnapshot>.Continuation] = [:]
    }
    let shared = LockedValue(Shared())

    /// Creates a controller. Nothing is fetched until ``performFetch()``.
    ///
    /// - Parameters:
    ///   - fetchRequest: the objects to show; at least one sort descriptor.
    ///   - context: the context whose objects and changes the controller follows.
    ///   - sectionNameKeyPath: the section of each object (nil: one section named "").
    public init(
        fetchRequest: FetchRequest<ResultType>, managedObjectContext context: ManagedObjectContext,
        sectionNameKeyPath: KeyPath<ResultType, String>? = nil
    ) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = context
        self.sectionName = sectionNameKeyPath.map { path in { $0[keyPath: path] } }
    }

    /// Creates a controller whose sections come from an optional string (nil is the section "").
    public init(
        fetchRequest: FetchRequest<ResultType>, managedObjectContext context: ManagedObjectContext,
        sectionNameKeyPath: KeyPath<ResultType, String?>
    ) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = context
        self.sectionName = { $0[keyPath: sectionNameKeyPath] ?? "" }
    }

    deinit {
        for o in observers { NotificationCenter.default.removeObserver(o) }
        let streams = shared.withLock { $0.streams.values }
        for s in streams { s.finish() }
    }

    // MARK: Fetching

    /// Fetches the results and starts following the context's changes. Call it again after
    /// changing ``fetchRequest``: the ``snapshots`` streams get the difference (the delegate is
    /// not called, as in Core Data).
    ///
    /// - Throws: `.invalidRequest` when the request has no sort descriptor, or when its order
    ///   does not keep each section's objects together; errors of the fetch (`.unknownEntity`,
    ///   `.unsupportedPredicate`, `.noStoreForEntity`, store errors). The results are unchanged
    ///   when it throws.
    public func performFetch() throws(CoherenceError) {
        let context = managedObjectContext
        context.assertOnExecutor()
        guard !fetchRequest.sortDescriptors.isEmpty else {
            throw CoherenceError(
                .invalidRequest, "A fetched-results controller needs a fetch request with at least one sort descriptor.",
                entity: (try? fetchRequest.entity(in: context.managedObjectModel))?.name)
        }
        let fetch = try fetchRequest.storeFetch(in: context.managedObjectModel)
        let newOrder = RowOrder(keys: fetch.sortKeys)
        let objects = try context.fetch(fetchRequest)
        let newRows = objects.map { Row(object: $0, section: sectionName?($0) ?? "", sortValues: newOrder.values(of: $0)) }
        let newLayout = SectionLayout(rowSectionNames: newRows.lazy.map(\.section))
        if let repeated = newLayout.repeatedName {
            throw CoherenceError(
                .invalidRequest,
                "The section '\(repeated)' is split: the first sort descriptor must order the objects by their section name.",
                entity: fetch.entity.name)
        }
        let wasFetched = compiled != nil
        let oldRows = rows, oldLayout = layout
        compiled = fetch
        fetchedRequest = fetchRequest
        order = newOrder
        refetchesOnChange = fetch.offset > 0 || newOrder.followsRelationships || (fetch.predicate?.followsRelationships ?? false)
        rows = newRows
        layout = newLayout
        if observers.isEmpty { startObserving() }
        var difference = FetchedResultsDifference()
        if wasFetched {
            let origin = ResultsDiff.origins(
                old: oldRows.map { ObjectIdentifier($0.object) }, new: rows.map { ObjectIdentifier($0.object) })
            let unchanged = [Bool](repeating: false, count: rows.count)
            difference = ResultsDiff.difference(old: oldRows, oldLayout, new: rows, layout, origin: origin, changed: unchanged).difference
        }
        publish(makeSnapshot(difference), toDelegate: false)
    }

    /// Follows the context's ObjectsDidChange and DidSave notifications (posted on its executor).
    private func startObserving() {
        let center = NotificationCenter.default
        for name in [ManagedObjectContext.objectsDidChangeNotification, ManagedObjectContext.didSaveNotification] {
            observers.append(
                center.addObserver(forName: name, object: managedObjectContext, queue: nil) { [weak self] note in
                    // Delivered synchronously on the context's executor, where the controller lives.
                    nonisolated(unsafe) let note = note
                    self?.receive(note)
                })
        }
    }

    // MARK: Results

    /// The results, in order (section by section). Empty before ``performFetch()``.
    public var fetchedObjects: [ResultType] {
        managedObjectContext.assertOnExecutor()
        return rows.compactMap { $0.object as? ResultType }
    }

    /// The sections, in order (one section named "" without a section key path, once fetched
    /// and not empty).
    public var sections: [FetchedResultsSection<ResultType>] {
        managedObjectContext.assertOnExecutor()
        return layout.names.indices.map { s in
            FetchedResultsSection(name: layout.names[s], objects: rows[layout.range(of: s)].compactMap { $0.object as? ResultType })
        }
    }

    /// The names of the sections, in order.
    public var sectionNames: [String] {
        managedObjectContext.assertOnExecutor()
        return layout.names
    }

    /// The object at an index path (section, item).
    ///
    /// ```swift
    /// let first = try controller.object(at: IndexPath(item: 0, section: 0))
    /// ```
    /// - Throws: `.invalidRequest` when the index path is outside the results.
    public func object(at indexPath: IndexPath) throws(CoherenceError) -> ResultType {
        managedObjectContext.assertOnExecutor()
        guard let i = layout.flatIndex(of: indexPath), let object = rows[i].object as? ResultType else {
            throw CoherenceError(
                .invalidRequest,
                "No object at index path \(Array(indexPath)): the results have \(layout.names.count) sections and \(rows.count) objects.",
                entity: compiled?.entity.name)
        }
        return object
    }

    /// The index path of an object in the results, or nil when it is not in them.
    public func indexPath(forObject object: ResultType) -> IndexPath? {
        managedObjectContext.assertOnExecutor()
        guard let i = rows.firstIndex(where: { $0.object === object }) else { return nil }
        return layout.indexPath(of: i)
    }

    /// The section index of a section name, or nil when no section has it.
    public func section(forSectionName name: String) -> Int? {
        managedObjectContext.assertOnExecutor()
        return layout.names.firstIndex(of: name)
    }

    // MARK: Snapshots

    /// The latest snapshot (nil before ``performFetch()``). Readable from any thread.
    public var snapshot: FetchedResultsSnapshot? { shared.withLock { $0.latest } }

    /// The results as a stream of snapshots: first the current results (when fetched), then one
    /// snapshot after each change, with its difference. Each access is a new stream; it ends when
    /// the controller goes away.
    ///
    /// ```swift
    /// for await snapshot in controller.snapshots {
    ///     print(snapshot.numberOfObjects, snapshot.difference)
    /// }
    /// ```
    public var snapshots: AsyncStream<FetchedResultsSnapshot> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<FetchedResultsSnapshot>.makeStream(bufferingPolicy: .unbounded)
        continuation.onTermination = { [weak self] _ in
            _ = self?.shared.withLock { $0.streams.removeValue(forKey: id) }
        }
        shared.withLock { s in
            if let latest = s.latest {
                continuation.yield(FetchedResultsSnapshot(sections: latest.sections, difference: FetchedResultsDifference()))
            }
            s.streams[id] = continuation
        }
        return stream
    }

    /// The current results as a snapshot with `difference`.
    func makeSnapshot(_ difference: FetchedResultsDifference) -> FetchedResultsSnapshot {
        let sections = layout.names.indices.map { s in
            FetchedResultsSnapshot.Section(name: layout.names[s], objectIDs: rows[layout.range(of: s)].map(\.object.objectID))
        }
        return FetchedResultsSnapshot(sections: sections, difference: difference)
    }

    /// Makes `snapshot` the latest and hands it to the change handlers and the streams (under
    /// the lock, so that a new stream never misses one or gets one twice), and, when asked, to
    /// the delegate's snapshot method.
    ///
    /// A delegate that fetches again from its snapshot method publishes a newer snapshot: this
    /// one, then stale, goes no further.
    func publish(_ snapshot: FetchedResultsSnapshot, toDelegate: Bool) {
        publications &+= 1
        let publication = publications
        if toDelegate { delegate?.controller(self, didChangeContentWith: snapshot) }
        guard publications == publication else { return }
        for handler in changeHandlers { handler(snapshot) }
        shared.withLock { s in
            s.latest = snapshot
            for c in s.streams.values { c.yield(snapshot) }
        }
    }
}
