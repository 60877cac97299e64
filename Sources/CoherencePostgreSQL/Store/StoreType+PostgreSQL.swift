import Foundation

extension StoreType {
    /// A store in a PostgreSQL schema, at a connection URL:
    /// `postgresql://user[:password]@host[:port]/database?schema=name` (a Unix-socket directory
    /// as `?host=/path`; the schema defaults to `public`). Each store lives in its own schema,
    /// created with its tables when missing, so per-user stores and configurations are schemas
    /// of one database. The password is used to connect and never shown: the attached store's
    /// `PersistentStore.url`, its errors and descriptions leave it out.
    ///
    /// ```swift
    /// import CoherencePostgreSQL
    ///
    /// let url = URL(string: "postgresql://app@db.internal:5432/shop?schema=tenant_42")!
    /// try coordinator.addPersistentStore(type: .postgreSQL, at: url)
    /// ```
    public static let postgreSQL = StoreType(name: "PostgreSQL", factory: PostgreSQLStoreFactory())
}

/// Opens ``PostgreSQLStore``s for ``StoreType/postgreSQL``.
struct PostgreSQLStoreFactory: StoreEngineFactory {
    func makeEngine(url: URL?, model: ManagedObjectModel, configuration: String?, options: StoreOptions) throws(CoherenceError)
        -> any StoreEngine
    {
        guard let url else {
            throw CoherenceError(
                .invalidRequest, "A PostgreSQL store needs a connection URL (postgresql://user@host:port/database?schema=name).")
        }
        return try PostgreSQLStore(url: url, model: model, configuration: configuration, options: options)
    }

    func publicURL(for url: URL?) -> URL? {
        guard let url, let configuration = try? PostgreSQLConfiguration(url: url) else { return nil }
        return URL(string: configuration.redactedURL)
    }
}
