import Foundation

/// A container with two coordinators on one store, in the shape of Ambar's `AmbarContainer`:
/// the container's coordinator serves the view context, and a ``writerCoordinator`` on the same
/// file serves background imports, whose saves are merged into the view context. The contexts
/// and the merge rule are those of ``ContextStrategy/DualCoordinator`` (also usable with
/// ``GenericConnect`` and ``GenericPersistentContainer``).
///
/// ```swift
/// let container = try DualCoordinatorContainer(managedObjectModel: model, storeURL: url)
/// let importer = container.importerContext()
/// try await importer.perform {
///     for row in rows { Person(context: importer).name = row }
///     try importer.save()          // merged into container.viewContext, on the main queue
/// }
/// ```
///
/// Unlike Ambar, the read-only view context and temporary contexts are enforced: a save that
/// would write from them throws `.readOnlyContext` and leaves the file untouched. The
/// initializer never needs a bundle name: without a model name or store URL, the store is
/// `<default location>/<process name>.sqlite`.
public final class DualCoordinatorContainer: GenericPersistentContainer<ContextStrategy.DualCoordinator>, @unchecked Sendable {
    // @unchecked Sendable: as GenericPersistentContainer; `storeURL` is immutable.

    /// The store's file (nil for a store in memory); a server store's connection URL.
    public let storeURL: URL?

    /// Creates the container and opens its store on both coordinators.
    ///
    /// - Parameters:
    ///   - storeType: `.sqlite` (default), `.inMemory` (then one coordinator serves both, as a
    ///     store in memory cannot be shared), or a server's store type (`.postgreSQL`: then
    ///     `storeURL` is its connection URL).
    ///   - modelName: the Xcode model to load from `bundle` when `managedObjectModel` is nil; also
    ///     the container's name and the default store file's name.
    ///   - bundle: where the model named `modelName` is.
    ///   - managedObjectModel: the model (wins over `modelName`).
    ///   - storeURL: the store's file (its directories are made); default
    ///     ``defaultStoreURL(name:)``. Ignored in memory.
    ///   - storeOptions: the store's options.
    /// - Throws: `.invalidRequest` without a model or a model name, or when the model cannot be
    ///   loaded (its ``ModelError`` in `underlyingErrors`); the store's errors when it cannot be
    ///   opened (`.storeOpenFailed`, `.storeIncompatible`, `.invalidLocation`, …).
    public init(
        storeType: StoreType = .sqlite, modelName: String? = nil, bundle: Bundle = .main,
        managedObjectModel: ManagedObjectModel? = nil, storeURL: URL? = nil, storeOptions: StoreOptions = StoreOptions()
    ) throws(CoherenceError) {
        let model = try Self.model(managedObjectModel, named: modelName, in: bundle)
        let name = modelName ?? Self.defaultStoreName()
        let url = storeType == .sqlite ? (storeURL ?? Self.defaultStoreURL(name: name)) : nil
        self.storeURL = storeType.factory == nil ? url : storeURL
        super.init(name: name, managedObjectModel: model)
        let configuration: StoreConfiguration
        if storeType.factory != nil {
            configuration = StoreConfiguration(type: storeType, location: storeURL, options: storeOptions)
        } else if let url {
            configuration = StoreConfiguration(fileName: url.lastPathComponent, type: .sqlite, options: storeOptions)
        } else {
            configuration = StoreConfiguration(type: .inMemory, options: storeOptions)
        }
        do {
            try attachPersistentStore(at: url?.deletingLastPathComponent() ?? storeLocation, for: configuration)
        } catch let error as CoherenceError {
            throw error
        } catch {
            throw CoherenceError(
                .storeOpenFailed, "The store could not be opened: \(error)",
                store: storeType.factory == nil ? url?.path : storeType.factory?.publicURL(for: storeURL)?.absoluteString)
        }
        _ = strategy.writerCoordinator  // opens the file on the writer coordinator now
    }

    /// Moves the store from `oldURL` (default: ``defaultStoreURL(name:)``) to `newURL`, with its
    /// `-wal` and `-shm` files, then opens it there as ``init(storeType:modelName:bundle:managedObjectModel:storeURL:storeOptions:)``
    /// does. Nothing at the old location: a store is opened (or made) at the new one. A store
    /// already at the new location (an earlier move that did not finish removing the old file):
    /// it is opened, and the old files are removed. A move stopped between the files (a crash)
    /// is finished by the next one, write-ahead log included.
    ///
    /// ```swift
    /// let container = try DualCoordinatorContainer(managedObjectModel: model, migratingFrom: oldURL, to: sharedURL)
    /// ```
    ///
    /// - Throws: `.storeOpenFailed` naming the file that could not be moved or removed (a failed
    ///   move puts back what it moved); the errors of the initializer.
    public convenience init(
        storeType: StoreType = .sqlite, modelName: String? = nil, bundle: Bundle = .main,
        managedObjectModel: ManagedObjectModel? = nil, migratingFrom oldURL: URL? = nil, to newURL: URL,
        storeOptions: StoreOptions = StoreOptions()
    ) throws(CoherenceError) {
        let old = oldURL ?? Self.defaultStoreURL(name: modelName ?? Self.defaultStoreName())
        try StoreFileMove.move(from: old, to: newURL)
        try self.init(
            storeType: storeType, modelName: modelName, bundle: bundle, managedObjectModel: managedObjectModel, storeURL: newURL,
            storeOptions: storeOptions)
    }

    /// The coordinator importer contexts write through (see
    /// ``ContextStrategy/DualCoordinator/writerCoordinator``).
    public var writerCoordinator: PersistentStoreCoordinator { strategy.writerCoordinator }

    /// Whether the view context is read-only (see
    /// ``ContextStrategy/DualCoordinator/isViewContextReadOnly``).
    @MainActor public var isViewContextReadOnly: Bool {
        get { strategy.isViewContextReadOnly }
        set { strategy.isViewContextReadOnly = newValue }
    }

    /// A new private-queue context on the writer coordinator, for imports.
    public func importerContext() -> ManagedObjectContext { strategy.importerContext() }

    /// A new private-queue context on the view context's coordinator that never writes.
    public func temporaryContext() -> ManagedObjectContext { strategy.temporaryContext() }

    /// A new child of the view context whose saves go into the view context, then to the store.
    /// - Throws: `.readOnlyContext` while the view context is read-only.
    @MainActor public func editorContext() throws(CoherenceError) -> ManagedObjectContext { try strategy.editorContext() }

    /// `<default location>/<name>.sqlite` (see ``StoreLocation/defaultLocation()``).
    public static func defaultStoreURL(name: String? = nil) -> URL {
        StoreLocation.defaultLocation().appendingPathComponent("\(name ?? defaultStoreName()).sqlite")
    }

    /// The process's name with non-alphanumeric characters trimmed from both ends ("Coherence"
    /// when nothing is left). Needs no bundle, unlike Ambar's `cleanAppName()`.
    public static func defaultStoreName() -> String {
        let trimmed = ProcessInfo.processInfo.processName.trimmingCharacters(in: CharacterSet.alphanumerics.inverted)
        return trimmed.isEmpty ? "Coherence" : trimmed
    }

    // MARK: Setting up

    private static func model(_ model: ManagedObjectModel?, named name: String?, in bundle: Bundle) throws(CoherenceError)
        -> ManagedObjectModel
    {
        if let model { return model }
        guard let name else {
            throw CoherenceError(.invalidRequest, "A dual-coordinator container needs a managed object model or a model name.")
        }
        do {
            return try ManagedObjectModel(named: name, in: bundle)
        } catch {
            var e = CoherenceError(.invalidRequest, "The model '\(name)' could not be loaded: \(error.message)")
            e.underlyingErrors = [error]
            throw e
        }
    }
}
