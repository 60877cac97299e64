import Dispatch
import Foundation

/// A container: a model loaded by name, a coordinator, and contexts arranged by a
/// ``ContextStrategyType``, as Core Data's `NSPersistentContainer`.
///
/// ```swift
/// let container = GenericPersistentContainer<ContextStrategy.Mixed>(name: "HR")   // HR.xcdatamodeld
/// try container.attachPersistentStore()        // <default location>/HR.sqlite
/// let people = try await container.viewContext.perform { try container.viewContext.fetch(FetchRequest<Person>()) }
/// ```
///
/// A model that cannot be found or parsed does not crash: ``modelError`` holds the error, and
/// attaching a store (or `start()` on ``GenericConnect``) throws it.
open class GenericPersistentContainer<Strategy: ContextStrategyType>: PersistentStack, @unchecked Sendable {
    // @unchecked Sendable: the `let`s are Sendable; the attached-store list and the error handler
    // are behind locks.

    /// The container's name.
    public let name: String
    /// The model (empty when it could not be loaded; see ``modelError``).
    public let managedObjectModel: ManagedObjectModel
    /// Why the model could not be loaded, if it could not.
    public let modelError: ModelError?
    /// The coordinator.
    public let persistentStoreCoordinator: PersistentStoreCoordinator
    /// The strategy that arranges the contexts.
    public let strategy: Strategy

    private let attached = LockedValue<[PersistentStore]>([])
    private let location = LockedValue<URL?>(nil)

    /// Where stores go when no location is given: ``defaultStoreLocation()`` unless set.
    public var storeLocation: URL {
        get { location.withLock { $0 } ?? Self.defaultStoreLocation() }
        set { location.withLock { $0 = newValue } }
    }
    private let errorSink: ErrorSink

    /// Creates a container for the Xcode model `name` in `bundle` (`<name>.xcdatamodeld` or
    /// `<name>.xcdatamodel`). `classes` maps entities to typed subclasses.
    public init(name: String, bundle: Bundle = .main, classes: [ManagedObject.Type] = []) {
        self.name = name
        let model: ManagedObjectModel
        var failure: ModelError?
        do {
            model = try ManagedObjectModel(named: name, in: bundle, classes: classes)
        } catch {
            failure = error
            model = ManagedObjectModel(empty: ())
        }
        self.managedObjectModel = model
        self.modelError = failure
        self.persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let sink = ErrorSink(containerName: name)
        self.errorSink = sink
        self.strategy = Strategy(persistentStoreCoordinator: persistentStoreCoordinator, errorHandler: { sink.report($0) })
    }

    /// Creates a container for a model built in code (or loaded elsewhere).
    public init(name: String, managedObjectModel: ManagedObjectModel) {
        self.name = name
        self.managedObjectModel = managedObjectModel
        self.modelError = nil
        self.persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: managedObjectModel)
        let sink = ErrorSink(containerName: name)
        self.errorSink = sink
        self.strategy = Strategy(persistentStoreCoordinator: persistentStoreCoordinator, errorHandler: { sink.report($0) })
    }

    /// Releasing a container first waits for the saves its strategy accepted (as
    /// ``detach(persistentStore:)`` does), then closes its stores (on every coordinator of its
    /// strategy: contexts that outlive the container no longer read or write them). A write that
    /// failed cannot be retried any more: it is logged as an error through ``CoherenceLogging``,
    /// naming the store.
    deinit {
        waitForStrategy()
        let stores = attached.withLock { $0 }
        let unwritten = storesWithUnwrittenChanges(stores)
        if !unwritten.isEmpty {
            let names = unwritten.map { $0.url?.path ?? $0.engine.locationDescription }.joined(separator: ", ")
            CoherenceLogging.log(
                .error, "stack",
                "Container '\(name)' released with changes its strategy accepted but could not write to \(names): they are lost. Last error: \(errorSink.lastError.map { "\($0)" } ?? "none")"
            )
        }
        for store in stores {
            try? persistentStoreCoordinator.remove(store)
            // A strategy's own copy (the dual-coordinator writer's) is closed too: contexts that
            // outlive the container must not keep the file open or write to it.
            strategy.didDetach(store)
        }
    }

    /// Where errors raised while propagating changes between contexts go (on a global queue).
    /// Default: logged as errors through ``CoherenceLogging`` (standard error, unless the app
    /// replaced the logger). ``waitForPendingSaves()`` also rethrows them.
    public var errorHandler: @Sendable (any Error) -> Void {
        get { errorSink.handler }
        set { errorSink.handler = newValue }
    }

    /// Returns when everything saved so far through the container's contexts is on disk: saves
    /// the strategy writes later (a view-context save that a root context writes, with
    /// ``ContextStrategy/IndirectNested`` and ``ContextStrategy/Mixed``) have been written.
    ///
    /// ```swift
    /// try await connect.viewContext.perform { try connect.viewContext.save() }
    /// try await connect.waitForPendingSaves()     // now it is in the file
    /// ```
    ///
    /// - Throws: the first error raised while propagating changes since the last call (the
    ///   ``errorHandler`` received it too). A failed write leaves its changes in the root
    ///   context, where a later save retries them.
    public func waitForPendingSaves() async throws {
        let strategy = self.strategy
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [willWait = willWaitForPendingSaves] in
                willWait?()
                strategy.waitForPendingSaves()
                done.resume()
            }
        }
        if let error = errorSink.takeFirstUnclaimed() { throw error }
    }

    /// A test hook, called when the container starts waiting for its strategy's saves (before
    /// a detach, a stop, on release, in ``waitForPendingSaves()``).
    package var willWaitForPendingSaves: (@Sendable () -> Void)? {
        get { waitHook.withLock { $0 } }
        set { waitHook.withLock { $0 = newValue } }
    }
    private let waitHook = LockedValue<(@Sendable () -> Void)?>(nil)

    private func waitForStrategy() {
        willWaitForPendingSaves?()
        strategy.waitForPendingSaves()
    }

    /// Waits for the strategy's accepted saves, then checks that none of `stores` would lose
    /// changes the strategy holds because their write failed.
    /// - Throws: the failed write's error (or `.invalidRequest` when the changes were made in
    ///   the writing context directly and never saved).
    private func settlePendingSaves(for stores: [PersistentStore]) throws {
        waitForStrategy()
        let unwritten = storesWithUnwrittenChanges(stores)
        guard let store = unwritten.first else { return }
        if let error = errorSink.lastError { throw error }
        throw CoherenceError(
            .invalidRequest,
            "The strategy's writing context holds unsaved changes for this store; save or roll them back before detaching it.",
            store: store.url?.path ?? store.engine.locationDescription)
    }

    /// The stores among `stores` that a writing context of the strategy holds changes for.
    private func storesWithUnwrittenChanges(_ stores: [PersistentStore]) -> [PersistentStore] {
        guard !stores.isEmpty else { return [] }
        var held: Set<UUID> = []
        for context in strategy.writingContexts {
            held.formUnion(context.performAndWait { context.storesWithChanges() })
        }
        return stores.filter { held.contains($0.identifier) }
    }

    /// The main-queue context.
    public var viewContext: ManagedObjectContext { strategy.viewContext }

    /// A new private-queue context arranged by the strategy.
    public func newBackgroundContext() -> ManagedObjectContext { strategy.newBackgroundContext() }

    /// `$XDG_DATA_HOME/Coherence` (else `~/.local/share/Coherence`) on Linux,
    /// `Application Support/Coherence` on Apple platforms.
    open class func defaultStoreLocation() -> URL { StoreLocation.defaultLocation() }

    /// The stores this container attached and has not detached.
    public var attachedStores: [PersistentStore] { attached.withLock { $0 } }

    /// Attaches a store for `configuration` at `location`, creating missing directories
    /// (readable by the owner only). An incompatible on-disk store throws, unless
    /// `overwriteIncompatibleStore` is set: then its file and `-wal`/`-shm` companions are
    /// replaced by a new store.
    @discardableResult
    public func attachPersistentStore(at location: URL, for configuration: StoreConfiguration) throws -> PersistentStore {
        if let modelError { throw modelError }
        if let config = configuration.name, config != ManagedObjectModel.defaultConfigurationName,
            managedObjectModel.configurations[config] == nil
        {
            throw CoherenceError(.invalidRequest, "The model '\(name)' has no configuration named '\(config)'.")
        }
        // The file name, or the container and configuration names it is made of, are one path
        // component each: the file cannot escape the location.
        try configuration.validateFileName(containerName: name)
        let store: PersistentStore
        if configuration.type.factory != nil {
            // A store of a server (PostgreSQL): at the configuration's own location.
            store = try persistentStoreCoordinator.addPersistentStore(
                type: configuration.type, configuration: configuration.name, at: configuration.location,
                options: configuration.options)
        } else if let url = configuration.url(in: location, containerName: name) {
            try StoreLocation.createDirectory(url.deletingLastPathComponent())
            do {
                store = try persistentStoreCoordinator.addPersistentStore(
                    type: .sqlite, configuration: configuration.name, at: url,
                    options: configuration.options)
            } catch {
                // (`catch where` on a typed-throws `do` crashes the 6.3 compiler; hence the guard.)
                guard error.code == .storeIncompatible && configuration.overwriteIncompatibleStore else { throw error }
                for suffix in ["", "-wal", "-shm"] {
                    let file = URL(fileURLWithPath: url.path + suffix)
                    if FileManager.default.fileExists(atPath: file.path) {
                        do { try FileManager.default.removeItem(at: file) } catch {
                            throw CoherenceError(
                                .storeOpenFailed, "Cannot remove the incompatible store file \(file.path): \(error.localizedDescription)",
                                store: url.path)
                        }
                    }
                }
                store = try persistentStoreCoordinator.addPersistentStore(
                    type: .sqlite, configuration: configuration.name, at: url,
                    options: configuration.options)
            }
        } else {
            store = try persistentStoreCoordinator.addPersistentStore(
                type: .inMemory, configuration: configuration.name,
                options: configuration.options)
        }
        attached.withLock { $0.append(store) }
        (strategy as? any StoreAttachFollowing)?.didAttach(store)
        return store
    }

    @discardableResult
    public func attachPersistentStores(at location: URL, for configurations: [StoreConfiguration]) throws -> [PersistentStore] {
        var stores: [PersistentStore] = []
        do {
            for c in configurations { stores.append(try attachPersistentStore(at: location, for: c)) }
        } catch {
            for s in stores { try? detach(persistentStore: s) }
            throw error
        }
        return stores
    }

    /// Detaches a store and closes its file, after the saves the strategy has already accepted
    /// for it are on disk: a view-context save that a root context writes later
    /// (``ContextStrategy/IndirectNested``, ``ContextStrategy/Mixed``) is written first, so a
    /// user who saves and logs out at once loses nothing.
    ///
    /// ```swift
    /// try await connect.viewContext.perform { try connect.viewContext.save() }
    /// try connect.detach(persistentStore: userStore)     // the save is in the user's file
    /// ```
    ///
    /// - Throws: `.storeNotAttached` when the store is not attached. When an accepted write to
    ///   the store failed, its error: the store stays attached and the changes stay in the
    ///   strategy's root context, to retry (save it again) or inspect.
    public func detach(persistentStore store: PersistentStore) throws {
        try settlePendingSaves(for: [store])
        try persistentStoreCoordinator.remove(store)
        attached.withLock { $0.removeAll { $0 === store } }
        strategy.didDetach(store)
    }

    /// Detaches several stores, each as ``detach(persistentStore:)`` does; a store whose
    /// accepted writes failed stays attached, and the first error is thrown after the others
    /// are detached.
    public func detach(persistentStores stores: [PersistentStore]) throws {
        var firstError: (any Error)?
        for s in stores {
            do { try detach(persistentStore: s) } catch { if firstError == nil { firstError = error } }
        }
        if let firstError { throw firstError }
    }

    /// Detaches every store of the coordinator, each as ``detach(persistentStore:)`` does.
    /// - Throws: the first error; stores whose writes failed stay attached.
    func detachAllStores() throws {
        try detach(persistentStores: persistentStoreCoordinator.persistentStores)
    }
}

/// Holds a container's error handler; strategies report to it. It also keeps the first error
/// not yet claimed by ``GenericPersistentContainer/waitForPendingSaves()`` and the last error,
/// for a detach that finds unwritten changes.
final class ErrorSink: Sendable {
    private struct State {
        var handler: @Sendable (any Error) -> Void
        var firstUnclaimed: (any Error)?
        var last: (any Error)?
    }
    private let state: LockedValue<State>

    init(containerName: String) {
        state = LockedValue(
            State(handler: { error in
                CoherenceLogging.log(.error, "stack", "container '\(containerName)': error while propagating changes: \(error)")
            }))
    }

    var handler: @Sendable (any Error) -> Void {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    /// The last error reported.
    var lastError: (any Error)? { state.withLock { $0.last } }

    /// The first error reported since the last call, which it clears.
    func takeFirstUnclaimed() -> (any Error)? {
        state.withLock { s in
            defer { s.firstUnclaimed = nil }
            return s.firstUnclaimed
        }
    }

    /// Records `error` at once and passes it to the handler on a global queue.
    func report(_ error: any Error) {
        let h = state.withLock { s in
            if s.firstUnclaimed == nil { s.firstUnclaimed = error }
            s.last = error
            return s.handler
        }
        DispatchQueue.global().async { h(error) }
    }
}
