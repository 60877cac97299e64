import Dispatch
import Foundation

extension ContextStrategy {
    /// Two coordinators on the same stores, as Ambar's container: the container's coordinator
    /// serves the view context, a second ``writerCoordinator`` on the same files serves
    /// background imports, so a long import never holds up the view context's reads. Saves made
    /// on the writer coordinator are merged into the view context.
    ///
    /// ```
    ///  view (main) ── editor (child) ┐
    ///  temporary ─────────────────── coordinator ─┐
    ///                                              ├─ the same files
    ///  importer ─────────────── writerCoordinator ┘   (importer saves merged into view)
    /// ```
    ///
    /// - ``viewContext``: main queue, merge policy ``MergePolicy/mergeByPropertyStoreTrump``;
    ///   read-only while ``isViewContextReadOnly`` (its saves throw `.readOnlyContext`).
    /// - ``importerContext()`` (and ``newBackgroundContext()``, so actions too): private queue on
    ///   the writer coordinator, ``MergePolicy/mergeByPropertyObjectTrump``.
    /// - ``temporaryContext()``: private queue on the view context's coordinator,
    ///   ``MergePolicy/rollback``; its saves always throw `.readOnlyContext`.
    /// - ``editorContext()``: a private-queue child of the view context,
    ///   ``MergePolicy/mergeByPropertyObjectTrump``; its save goes into the view context, which
    ///   then saves to the stores.
    ///
    /// Only saves of root contexts on the writer coordinator are merged into the view context:
    /// asynchronously, on its queue, in the order they were made; the view context's own saves
    /// and its children's never come back to it. A merge refreshes the objects the view context
    /// holds and only names the others, so an import of 100,000 objects costs a view context
    /// that holds 10 about ten objects' work (its fetched-results controllers still report the
    /// objects that match them).
    ///
    /// The writer coordinator is made at its first use once a store is attached, and opens the
    /// container's SQLite stores (stores the container attaches later are opened there when they
    /// are attached; a store the container detaches is closed there before the detach returns,
    /// see ``didDetach(_:)``). When a store in memory is attached at that point, the writer
    /// coordinator is the container's coordinator (a store in memory cannot be shared), as with
    /// no store at all.
    public final class DualCoordinator: ContextStrategyType, StoreAttachFollowing {
        public let viewContext: ManagedObjectContext
        let coordinator: PersistentStoreCoordinator
        let errorHandler: @Sendable (any Error) -> Void
        /// Whether the view context (and editor contexts) may not save.
        let readOnly = LockedValue(false)
        private let writer: LockedValue<PersistentStoreCoordinator?>
        let merger: WriterSaveMerger
        /// Keeps the writer coordinator's row cache in step with the container's saves (made
        /// with the writer coordinator, when that is a second one).
        private let invalidator = LockedValue<WriterRowCacheInvalidator?>(nil)
        /// View-context saves queued by editor-context saves.
        let viewSaves = QueuedParentSaves()
        /// Importer contexts made before the writer coordinator was decided (no store attached
        /// yet): they work on the container's coordinator.
        private let earlyImporters: LockedValue<[WeakObject]>
        /// Merges the early importers' saves into the view context, as the writer's are, while
        /// the writer coordinator is not the container's (then ``merger`` merges them).
        private let earlyMerger: WriterSaveMerger

        public init(persistentStoreCoordinator: PersistentStoreCoordinator, errorHandler: @escaping @Sendable (any Error) -> Void) {
            coordinator = persistentStoreCoordinator
            self.errorHandler = errorHandler
            let view = ManagedObjectContext(concurrencyType: .mainQueue, coordinator: persistentStoreCoordinator, name: "viewContext")
            view.mergePolicy = .mergeByPropertyStoreTrump
            view.hooks.errorHandler = errorHandler
            view.hooks.saveRefusal = Self.refusal(readOnly, "the view context is read-only (isViewContextReadOnly)")
            viewContext = view
            merger = WriterSaveMerger(view: view, viewCoordinator: persistentStoreCoordinator)
            let writer = LockedValue<PersistentStoreCoordinator?>(nil)
            self.writer = writer
            let early = LockedValue<[WeakObject]>([])
            earlyImporters = early
            earlyMerger = WriterSaveMerger(view: view, viewCoordinator: persistentStoreCoordinator) {
                [writer, weak persistentStoreCoordinator] source in
                let isEarly = early.withLock { list in list.contains { $0.object === source } }
                return isEarly && writer.withLock { $0 } !== persistentStoreCoordinator
            }
            persistentStoreCoordinator.subscribe(earlyMerger)
        }

        /// A save refusal while `flag` is set.
        static func refusal(_ flag: LockedValue<Bool>, _ why: String) -> @Sendable () -> CoherenceError? {
            { flag.withLock { $0 } ? CoherenceError(.readOnlyContext, "Nothing was saved: \(why).") : nil }
        }

        /// The coordinator background imports write through: a second coordinator on the same
        /// SQLite files, or the view context's coordinator when a store in memory is attached.
        /// Its store list follows the container's at each use.
        public var writerCoordinator: PersistentStoreCoordinator { resolveWriter().coordinator }

        /// The writer coordinator, and whether it is decided (it is not while no store is
        /// attached: then it is the container's coordinator for now).
        private func resolveWriter() -> (coordinator: PersistentStoreCoordinator, decided: Bool) {
            writer.withLock { current in
                let stores = coordinator.persistentStores
                let chosen: PersistentStoreCoordinator
                if let current {
                    chosen = current
                } else if stores.isEmpty {
                    return (coordinator, false)  // decided once a store is attached
                } else if stores.contains(where: { $0.url == nil }) {
                    chosen = coordinator
                } else {
                    chosen = PersistentStoreCoordinator(managedObjectModel: coordinator.managedObjectModel)
                }
                if current == nil {
                    current = chosen
                    chosen.subscribe(merger)
                    if chosen !== coordinator {
                        let invalidator = WriterRowCacheInvalidator(writer: chosen)
                        self.invalidator.withLock { $0 = invalidator }
                        coordinator.subscribe(invalidator)
                    }
                }
                if chosen !== coordinator { follow(stores, in: chosen) }
                return (chosen, true)
            }
        }

        /// Opens in `writer` the SQLite (and server) stores of `stores` it lacks, and closes
        /// those it has that are no longer attached. A store is the same when both its location
        /// and its identifier are: a file deleted and made again at the same path is a new
        /// store, and the writer's copy of the old one (an unlinked file) is closed.
        private func follow(_ stores: [PersistentStore], in writer: PersistentStoreCoordinator) {
            func key(_ s: PersistentStore) -> StoreKey? { s.url.map { StoreKey(url: $0.standardizedFileURL, identifier: s.identifier) } }
            let attached = Set(stores.compactMap(key))
            for s in writer.persistentStores where key(s).map({ !attached.contains($0) }) ?? true {
                do { try writer.remove(s) } catch { errorHandler(error) }
            }
            let open = Set(writer.persistentStores.compactMap(key))
            for s in stores {
                guard let url = s.url, let k = key(s), !open.contains(k) else { continue }
                do {
                    try writer.addPersistentStore(
                        type: s.type, configuration: s.configurationName, at: s.openedURL ?? url, options: s.options)
                } catch {
                    errorHandler(error)
                }
            }
        }

        /// A store as the writer coordinator matches it with the container's.
        private struct StoreKey: Hashable {
            let url: URL
            let identifier: UUID
        }

        /// Closes the writer coordinator's copy of a store the container detached, at once: an
        /// importer context made before the detach then fails to save into it
        /// (`.storeNotAttached` or `.noStoreForEntity`) and no longer reads it, and the file
        /// is closed when the detach returns.
        public func didDetach(_ store: PersistentStore) {
            writer.withLock { current in
                guard let current, current !== coordinator else { return }
                follow(coordinator.persistentStores, in: current)
            }
        }

        /// Opens a store the container attached on the writer coordinator at once (when that is
        /// a second coordinator): importer contexts made before the attach read and write it.
        func didAttach(_ store: PersistentStore) {
            writer.withLock { current in
                guard let current, current !== coordinator else { return }
                follow(coordinator.persistentStores, in: current)
            }
        }

        /// Whether the view context is read-only: its saves (and editor contexts' saves) throw
        /// `.readOnlyContext` and write nothing, and its merge policy is ``MergePolicy/rollback``
        /// (``MergePolicy/mergeByPropertyStoreTrump`` when false). Setting the value it has
        /// does nothing.
        @MainActor public var isViewContextReadOnly: Bool {
            get { readOnly.withLock { $0 } }
            set {
                let changed = readOnly.withLock { value -> Bool in
                    defer { value = newValue }
                    return value != newValue
                }
                if changed { viewContext.mergePolicy = newValue ? .rollback : .mergeByPropertyStoreTrump }
            }
        }

        /// A new private-queue context on the writer coordinator, merge policy
        /// ``MergePolicy/mergeByPropertyObjectTrump``: for imports. Its saves are merged into the
        /// view context.
        public func importerContext() -> ManagedObjectContext {
            let (chosen, decided) = resolveWriter()
            let c = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: chosen, name: "importer")
            c.mergePolicy = .mergeByPropertyObjectTrump
            c.hooks.errorHandler = errorHandler
            if !decided {
                // Made before a store was attached: on the container's coordinator for good.
                earlyImporters.withLock { list in
                    list.removeAll { $0.object == nil }
                    list.append(WeakObject(c))
                }
            }
            return c
        }

        /// An importer context (see ``importerContext()``): background work, actions included,
        /// writes through the writer coordinator.
        public func newBackgroundContext() -> ManagedObjectContext { importerContext() }

        /// A new private-queue context on the view context's coordinator, merge policy
        /// ``MergePolicy/rollback``, that never writes: a save with changes throws
        /// `.readOnlyContext`, and nothing it holds reaches the stores.
        public func temporaryContext() -> ManagedObjectContext {
            let c = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "temporary")
            c.mergePolicy = .rollback
            c.hooks.errorHandler = errorHandler
            c.hooks.saveRefusal = { CoherenceError(.readOnlyContext, "Nothing was saved: a temporary context never writes.") }
            return c
        }

        /// A new private-queue child of the view context, merge policy
        /// ``MergePolicy/mergeByPropertyObjectTrump``: its save goes into the view context, which
        /// then saves to the stores on its own queue.
        ///
        /// - Throws: `.readOnlyContext` while the view context is read-only (Ambar stops the
        ///   program there). An editor context made before the view context became read-only
        ///   refuses its saves with the same error.
        @MainActor public func editorContext() throws(CoherenceError) -> ManagedObjectContext {
            guard !isViewContextReadOnly else {
                throw CoherenceError(
                    .readOnlyContext,
                    "No editor context while the view context is read-only: set isViewContextReadOnly to false, save, and set it back.")
            }
            let c = ManagedObjectContext(concurrencyType: .privateQueue, parent: viewContext, name: "editor")
            c.mergePolicy = .mergeByPropertyObjectTrump
            c.hooks.errorHandler = errorHandler
            c.hooks.didSave = ContextStrategy.saveParent(viewContext, errorHandler, queued: viewSaves)
            c.hooks.saveRefusal = Self.refusal(readOnly, "the view context is read-only (isViewContextReadOnly)")
            return c
        }

        /// Runs the view-context saves that editor saves queued.
        public func waitForPendingSaves() { viewSaves.drain(viewContext, errorHandler) }
    }
}
