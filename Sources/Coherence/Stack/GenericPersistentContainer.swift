import Dispatch
import Foundation
import Synchronization

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
    // are behind Mutexes.

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

    private let attached = Mutex<[PersistentStore]>([])
    private let location = Mutex<URL?>(nil)

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
        let sink = ErrorSink()
        self.errorSink = sink
        self.strategy = Strategy(persistentStoreCoordinator: persistentStoreCoordinator, errorHandler: { sink.report($0) })
    }

    /// Creates a container for a model built in code (or loaded elsewhere).
    public init(name: String, managedObjectModel: ManagedObjectModel) {
        self.name = name
        self.managedObjectModel = managedObjectModel
        self.modelError = nil
        self.persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: managedObjectModel)
        let sink = ErrorSink()
        self.errorSink = sink
        self.strategy = Strategy(persistentStoreCoordinator: persistentStoreCoordinator, errorHandler: { sink.report($0) })
    }

    deinit {
        for store in attached.withLock({ $0 }) { try? persistentStoreCoordinator.remove(store) }
    }

    /// Where errors raised while propagating changes between contexts go (on a global queue).
    /// Default: printed to standard error.
    public var errorHandler: @Sendable (any Error) -> Void {
        get { errorSink.handler }
        set { errorSink.handler = newValue }
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
           managedObjectModel.configurations[config] == nil {
            throw CoherenceError(.invalidRequest, "The model '\(name)' has no configuration named '\(config)'.")
        }
        // The file name, or the container and configuration names it is made of, are one path
        // component each: the file cannot escape the location.
        try configuration.validateFileName(containerName: name)
        let store: PersistentStore
        if let url = configuration.url(in: location, containerName: name) {
            try StoreLocation.createDirectory(url.deletingLastPathComponent())
            do {
                store = try persistentStoreCoordinator.addPersistentStore(type: .sqlite, configuration: configuration.name, at: url,
                                                                          options: configuration.options)
            } catch {
                // (`catch where` on a typed-throws `do` crashes the 6.3 compiler; hence the guard.)
                guard error.code == .storeIncompatible && configuration.overwriteIncompatibleStore else { throw error }
                for suffix in ["", "-wal", "-shm"] {
                    let file = URL(fileURLWithPath: url.path + suffix)
                    if FileManager.default.fileExists(atPath: file.path) {
                        do { try FileManager.default.removeItem(at: file) } catch {
                            throw CoherenceError(.storeOpenFailed, "Cannot remove the incompatible store file \(file.path): \(error.localizedDescription)",
                                                 store: url.path)
                        }
                    }
                }
                store = try persistentStoreCoordinator.addPersistentStore(type: .sqlite, configuration: configuration.name, at: url,
                                                                          options: configuration.options)
            }
        } else {
            store = try persistentStoreCoordinator.addPersistentStore(type: .inMemory, configuration: configuration.name,
                                                                      options: configuration.options)
        }
        attached.withLock { $0.append(store) }
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

    /// Detaches a store and closes its file.
    /// - Throws: `.storeNotAttached` when the store is not attached.
    public func detach(persistentStore store: PersistentStore) throws {
        try persistentStoreCoordinator.remove(store)
        attached.withLock { $0.removeAll { $0 === store } }
    }

    public func detach(persistentStores stores: [PersistentStore]) throws {
        var firstError: (any Error)?
        for s in stores {
            do { try detach(persistentStore: s) } catch { if firstError == nil { firstError = error } }
        }
        if let firstError { throw firstError }
    }

    /// Detaches every store of the coordinator.
    func detachAllStores() {
        for s in persistentStoreCoordinator.persistentStores { try? detach(persistentStore: s) }
    }
}

/// Holds a container's error handler; strategies report to it.
final class ErrorSink: Sendable {
    private let storage = Mutex<@Sendable (any Error) -> Void>({ error in
        FileHandle.standardError.write(Data("Coherence: error while propagating changes: \(error)\n".utf8))
    })
    var handler: @Sendable (any Error) -> Void {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    func report(_ error: any Error) {
        let h = handler
        DispatchQueue.global().async { h(error) }
    }
}
