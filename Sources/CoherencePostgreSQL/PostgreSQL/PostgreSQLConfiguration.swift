import Foundation

/// Where a PostgreSQL store lives, parsed from its URL:
/// `postgresql://user[:password]@host[:port]/database?schema=name`.
///
/// `host` may be a Unix-socket directory, given as `?host=/path` (the URL's host is then empty:
/// `postgresql://user@/database?host=/tmp/pg&schema=app`). The store's own query items:
/// `schema` (default `public`), `pool_size` (the reader connections kept open, 1 to 100, default
/// 4), `statement_timeout` and `lock_timeout` (PostgreSQL durations such as `5s` or `250ms`, set on
/// every connection). Other query items (`sslmode`, `connect_timeout`, `application_name`, …) are
/// passed to libpq as connection keywords.
///
/// The password is kept for libpq only: ``redactedURL`` and every description leave it out.
struct PostgreSQLConfiguration: Sendable, Equatable {
    /// libpq connection keywords and values (`user`, `password`, `host`, `port`, `dbname`, …).
    let parameters: [(key: String, value: String)]
    /// The schema the store's tables live in.
    let schema: String
    /// How many idle reader connections the store's pool keeps (`pool_size`).
    let poolSize: Int
    /// Server settings made on every connection (`statement_timeout`, `lock_timeout`).
    let settings: [(name: String, value: String)]
    /// The query items that are the store's, not libpq's.
    static let settingNames: Set<String> = ["statement_timeout", "lock_timeout"]
    /// The longest schema name, in UTF-8 bytes (PostgreSQL's `NAMEDATALEN` - 1; longer names
    /// are cut, not refused, by the server).
    static let maximumSchemaBytes = 63
    /// The largest `pool_size`.
    static let maximumPoolSize = 100
    /// The URL without its password (for errors, descriptions and logs).
    let redactedURL: String
    /// The password, if the URL has one (only for libpq, and for removing it from messages).
    let password: String?

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.parameters.elementsEqual(rhs.parameters, by: { $0 == $1 }) && lhs.schema == rhs.schema && lhs.poolSize == rhs.poolSize
            && lhs.settings.elementsEqual(rhs.settings, by: { $0 == $1 }) && lhs.redactedURL == rhs.redactedURL
            && lhs.password == rhs.password
    }

    /// Parses a `postgresql://` (or `postgres://`) URL.
    /// - Throws: a ``PostgreSQLError`` (no SQLSTATE) naming what is wrong, the URL shown without
    ///   its password.
    init(url: URL) throws(PostgreSQLError) {
        let text = url.absoluteString
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw PostgreSQLError(message: "The store URL is not a valid URL.", location: Self.redact(text))
        }
        var redacted = components
        if redacted.password != nil { redacted.password = nil }
        let shown = redacted.string ?? Self.redact(text)
        guard let scheme = components.scheme?.lowercased(), scheme == "postgresql" || scheme == "postgres" else {
            throw PostgreSQLError(message: "A PostgreSQL store URL starts with postgresql://.", location: shown)
        }
        var parameters: [(key: String, value: String)] = []
        if let user = components.user, !user.isEmpty { parameters.append(("user", user)) }
        let password = components.password
        if let password { parameters.append(("password", password)) }
        if let host = components.host, !host.isEmpty { parameters.append(("host", host)) }
        if let port = components.port { parameters.append(("port", String(port))) }
        let database = String(components.path.drop { $0 == "/" })
        if !database.isEmpty { parameters.append(("dbname", database)) }
        var schema = "public"
        var poolSize = 4
        var settings: [(name: String, value: String)] = []
        for item in components.queryItems ?? [] {
            guard let value = item.value, !value.isEmpty else {
                throw PostgreSQLError(message: "The URL's query item '\(item.name)' has no value.", location: shown)
            }
            switch item.name {
            case "schema":
                // PostgreSQL cuts longer names to 63 bytes: two longer names sharing their first
                // 63 bytes would name one schema, so one store would open another's rows.
                guard value.utf8.count <= Self.maximumSchemaBytes else {
                    throw PostgreSQLError(
                        message:
                            "The URL's schema name is \(value.utf8.count) bytes; PostgreSQL names are at most \(Self.maximumSchemaBytes).",
                        location: shown)
                }
                guard !value.utf8.contains(0) else {
                    throw PostgreSQLError(message: "The URL's schema name holds a NUL character.", location: shown)
                }
                schema = value
            case "pool_size":
                guard let n = Int(value), (1...Self.maximumPoolSize).contains(n) else {
                    throw PostgreSQLError(
                        message: "The URL's pool_size must be a number from 1 to \(Self.maximumPoolSize), not '\(value)'.", location: shown)
                }
                poolSize = n
            case let name where Self.settingNames.contains(name):
                settings.removeAll { $0.name == name }
                settings.append((name, value))
            case "password", "passfile":
                throw PostgreSQLError(message: "Give the password in the URL's user part, not as '\(item.name)'.", location: shown)
            default:
                parameters.removeAll { $0.key == item.name }
                parameters.append((item.name, value))
            }
        }
        self.parameters = parameters
        self.schema = schema
        self.poolSize = poolSize
        self.settings = settings
        self.redactedURL = shown
        self.password = password
    }

    /// Removes the password part (`:secret@`) from a URL text that `URLComponents` cannot parse.
    private static func redact(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].firstIndex(of: "@") else { return text }
        let userInfo = text[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + String(text[at...])
    }

    /// `text` with every occurrence of the password removed (for libpq's and the server's messages).
    func redacting(_ text: String) -> String {
        guard let password, !password.isEmpty else { return text }
        return text.replacingOccurrences(of: password, with: "***")
    }
}
