import Foundation

/// Which store to attach and how, as Coherence's `StoreConfiguration`.
///
/// ```swift
/// try connect.attachPersistentStores(for: [
///     StoreConfiguration(name: "TransientData", type: .inMemory),
///     StoreConfiguration(name: "PersistentData", type: .sqlite),
/// ])
/// ```
///
/// A store of a server (`StoreType.postgreSQL`, in `CoherencePostgreSQL`) is at its
/// ``location``, its connection URL:
///
/// ```swift
/// StoreConfiguration(name: "PersistentData", type: .postgreSQL,
///                    location: URL(string: "postgresql://app@db:5432/hr?schema=alice"))
/// ```
///
/// File naming: an in-memory store has no file; with `fileName` the store is
/// `location/fileName`; otherwise `location/<container name>[.<configuration lowercased>].sqlite`
/// (`HR.sqlite`, `HR.persistentdata.sqlite`).
public struct StoreConfiguration: Equatable, Sendable, CustomStringConvertible {
    /// The store's file name (nil: derived from the container and configuration names).
    public var fileName: String?
    /// The model configuration the store holds (nil: every entity).
    public var name: String?
    /// SQLite, in-memory, or a store type of another product (`.postgreSQL`).
    public var type: StoreType
    /// Where a store of a server is: its connection URL (a PostgreSQL store's
    /// `postgresql://user@host:port/database?schema=name`). Nil for SQLite and in-memory stores,
    /// whose place the container works out (see ``url(in:containerName:)``).
    public var location: URL?
    /// Replace an on-disk store made for an incompatible model (with its `-wal`/`-shm` files)
    /// by a new, empty store instead of failing.
    public var overwriteIncompatibleStore: Bool
    /// Store options (default: infer and migrate).
    public var options: StoreOptions

    /// Creates a configuration; every argument has the default Coherence uses.
    public init(
        fileName: String? = nil, name: String? = nil, type: StoreType = .sqlite,
        overwriteIncompatibleStore: Bool = false, options: StoreOptions = StoreOptions()
    ) {
        self.init(
            fileName: fileName, name: name, type: type, location: nil, overwriteIncompatibleStore: overwriteIncompatibleStore,
            options: options)
    }

    /// Creates a configuration of a store of a server at `location` (a PostgreSQL store's
    /// connection URL).
    public init(
        fileName: String? = nil, name: String? = nil, type: StoreType, location: URL?,
        overwriteIncompatibleStore: Bool = false, options: StoreOptions = StoreOptions()
    ) {
        self.fileName = fileName
        self.name = name
        self.type = type
        self.location = location
        self.overwriteIncompatibleStore = overwriteIncompatibleStore
        self.options = options
    }

    /// The store file for a container at `location`, or nil for an in-memory store.
    public func url(in location: URL, containerName: String) -> URL? {
        guard type == .sqlite else { return nil }
        if let fileName { return location.appendingPathComponent(fileName) }
        var file = containerName
        if let name { file += "." + name.lowercased() }
        file += "." + type.description.lowercased()
        return location.appendingPathComponent(file)
    }

    /// Checks that the names the store's file name is made of are one path component each, so
    /// the file stays in its location: the `fileName`, or else (for a SQLite store) the
    /// container's name and the configuration's name, as ``StoreLocation/validateComponent(_:what:)``.
    /// - Throws: `.invalidLocation`.
    func validateFileName(containerName: String) throws(CoherenceError) {
        if let fileName {
            try StoreLocation.validateComponent(fileName, what: "store file name")
            return
        }
        guard type == .sqlite else { return }
        try StoreLocation.validateComponent(containerName, what: "container name")
        if let name { try StoreLocation.validateComponent(name, what: "configuration name") }
    }

    /// The configuration's settings, for diagnostics.
    public var description: String {
        var parts: [String] = []
        if let fileName { parts.append("fileName: '\(fileName)'") }
        if let name { parts.append("name: '\(name)'") }
        parts.append("type: \(type)")
        // A server's URL without its password.
        if let location { parts.append("location: \(type.factory?.publicURL(for: location)?.absoluteString ?? location.path)") }
        if overwriteIncompatibleStore { parts.append("overwriteIncompatibleStore: true") }
        return "<StoreConfiguration> (\(parts.joined(separator: ", ")))"
    }
}

/// Store locations: the default one, and per-user locations that cannot escape their parent.
public enum StoreLocation {
    /// `$XDG_DATA_HOME/Coherence` (else `~/.local/share/Coherence`) on Linux;
    /// `Application Support/Coherence` on Apple platforms.
    public static func defaultLocation() -> URL {
        #if canImport(Darwin)
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent("Library/Application Support")
        return base.appendingPathComponent("Coherence", isDirectory: true)
        #else
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty, xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("Coherence", isDirectory: true)
        }
        return URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true)
            .appendingPathComponent(".local/share/Coherence", isDirectory: true)
        #endif
    }

    /// The location of one user's stores: `parent/<userName>`.
    ///
    /// - Throws: `.invalidLocation` when the name is empty, `.` or `..`, or contains `/` or NUL
    ///   (so it cannot escape `parent`).
    public static func location(forUser userName: String, under parent: URL = defaultLocation()) throws(CoherenceError) -> URL {
        try validateComponent(userName, what: "user name")
        return parent.appendingPathComponent(userName, isDirectory: true)
    }

    /// Checks that `component` is one safe path component.
    public static func validateComponent(_ component: String, what: String = "path component") throws(CoherenceError) {
        let problem: String?
        if component.isEmpty {
            problem = "is empty"
        } else if component == "." || component == ".." {
            problem = "is '\(component)'"
        } else if component.contains("/") {
            problem = "contains '/'"
        } else if component.unicodeScalars.contains("\u{0}") {
            problem = "contains a NUL character"
        } else {
            problem = nil
        }
        if let problem {
            throw CoherenceError(
                .invalidLocation, "The \(what) \(String(reflecting: component)) \(problem); it must be a single path component.")
        }
    }

    /// Creates `directory` (and missing parents) readable by the owner only, from the moment
    /// each exists (see `OwnerOnlyFiles`).
    static func createDirectory(_ directory: URL) throws(CoherenceError) {
        try OwnerOnlyFiles.createDirectory(directory)
    }
}
