import Foundation

/// The contract of a Coherence container: a model, a coordinator, a view context, background
/// contexts, and stores attached and detached at run time.
///
/// ``GenericPersistentContainer`` and ``GenericConnect`` both conform, so code written against
/// `PersistentStack` takes either.
public protocol PersistentStack: AnyObject, Sendable {
    /// The container's name (the model's name, and the base of store file names).
    var name: String { get }
    /// The model.
    var managedObjectModel: ManagedObjectModel { get }
    /// The coordinator.
    var persistentStoreCoordinator: PersistentStoreCoordinator { get }
    /// The main-queue context.
    var viewContext: ManagedObjectContext { get }
    /// A new private-queue context, arranged by the container's strategy.
    func newBackgroundContext() -> ManagedObjectContext
    /// Where stores go by default.
    static func defaultStoreLocation() -> URL
    /// Where this container puts stores when no location is given (initially
    /// `defaultStoreLocation()`).
    var storeLocation: URL { get }
    /// Attaches one store. Works before and after `start()`.
    @discardableResult
    func attachPersistentStore(at location: URL, for configuration: StoreConfiguration) throws -> PersistentStore
    /// Attaches several stores; on failure, the ones attached by this call are detached again.
    @discardableResult
    func attachPersistentStores(at location: URL, for configurations: [StoreConfiguration]) throws -> [PersistentStore]
    /// Detaches a store and closes its file.
    func detach(persistentStore: PersistentStore) throws
    /// Detaches several stores.
    func detach(persistentStores: [PersistentStore]) throws
}

extension PersistentStack {
    /// Attaches a store at ``storeLocation``.
    @discardableResult
    public func attachPersistentStore(for configuration: StoreConfiguration = StoreConfiguration()) throws -> PersistentStore {
        try attachPersistentStore(at: storeLocation, for: configuration)
    }

    /// Attaches a store with the default configuration.
    @discardableResult
    public func attachPersistentStore(at location: URL) throws -> PersistentStore {
        try attachPersistentStore(at: location, for: StoreConfiguration())
    }

    /// Attaches several stores at ``storeLocation``.
    @discardableResult
    public func attachPersistentStores(for configurations: [StoreConfiguration]) throws -> [PersistentStore] {
        try attachPersistentStores(at: storeLocation, for: configurations)
    }
}
