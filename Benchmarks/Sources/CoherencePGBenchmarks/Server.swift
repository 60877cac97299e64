import Foundation

/// The server the PostgreSQL benchmarks run against, from a Coherence store URL
/// (`postgresql://user[:password]@host[:port]/database?host=/socket/dir`): each implementation
/// works in its own schema of that one database.
struct Server: Sendable {
    /// The URL as given (without a schema).
    let url: URL
    let user: String
    let password: String?
    let database: String
    /// A Unix-socket directory, or nil for TCP.
    let socketDirectory: String?
    let host: String
    let port: Int
    /// libpq connection keywords and values (the query items libpq understands as they are).
    let keywords: [(String, String)]

    init(_ text: String) throws {
        guard let components = URLComponents(string: text), let url = components.url,
            components.scheme == "postgresql" || components.scheme == "postgres"
        else { throw BenchmarkError("not a postgresql:// URL: \(text)") }
        var items = components.queryItems ?? []
        items.removeAll { ["schema", "pool_size", "statement_timeout", "lock_timeout"].contains($0.name) }
        var plain = components
        plain.queryItems = items.isEmpty ? nil : items
        self.url = plain.url ?? url
        user = components.user ?? NSUserName()
        password = components.password
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        database = path.isEmpty ? user : path
        socketDirectory = items.first { $0.name == "host" && ($0.value ?? "").hasPrefix("/") }?.value
        host = components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        port = components.port ?? 5432
        var keywords: [(String, String)] = [("user", user), ("dbname", database), ("port", String(port))]
        if let password { keywords.append(("password", password)) }
        if socketDirectory == nil { keywords.append(("host", host)) }
        for item in items { keywords.append((item.name, item.value ?? "")) }
        self.keywords = keywords
    }

    /// The Coherence store URL of `schema`.
    func storeURL(schema: String, extra: [URLQueryItem] = []) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "schema", value: schema)] + extra
        return components.url ?? url
    }

    /// The URL of the command line, of `COHERENCE_TEST_POSTGRES_URL`, or nil.
    static func given(_ option: String?) -> String? {
        option ?? ProcessInfo.processInfo.environment["COHERENCE_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` on the concurrency pool and waits for it (the harness is synchronous).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<T, any Error>?
    Task {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        done.signal()
    }
    done.wait()
    guard let result else { throw BenchmarkError("no result") }
    return try result.get()
}

/// Seconds spent in `body` (asynchronous).
func measureAsync(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}
