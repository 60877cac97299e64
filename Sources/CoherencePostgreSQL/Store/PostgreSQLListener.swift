import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Hears the commits other coordinators make to one PostgreSQL store, through `LISTEN` on the
/// store's channel, on a thread of its own.
///
/// Each commit of a store opened with `remoteChangeNotificationPost` sends, inside its
/// transaction (so only when it commits), a notification on the channel `coherence.<store
/// UUID>` whose payload is the sending store object's identifier and, when the commit has one,
/// its history token's transaction number. The listener leaves out its own store object's
/// notifications, and reports the others once per wake-up with the last token. When its
/// connection is lost it connects again (retrying every half second until it is stopped) and
/// then reports one change without a token: commits may have been missed meanwhile.
final class PostgreSQLListener: @unchecked Sendable {
    // @unchecked Sendable: `connection` is used by the listening thread only (after `init`
    // made it); `stopped` is under its lock; the pipe's descriptors are set once in `init` and
    // closed in `deinit`, after the thread (which holds the listener) has ended.

    let configuration: PostgreSQLConfiguration
    let channel: String
    /// The identifier of the store object this listener belongs to (its own commits' sender).
    let sender: String
    let storeIdentifier: UUID
    private let onChange: @Sendable (PersistentHistoryToken?) -> Void
    private var connection: PostgreSQLConnection?
    private let stopped = LockedValue(false)
    /// How many notifications on the channel the listener has handled (its own included).
    let handled = LockedValue(0)
    /// A pipe whose read end wakes the thread when `stop()` writes to it.
    private let wake: (read: Int32, write: Int32)

    /// The channel of a store's commits.
    static func channel(of storeIdentifier: UUID) -> String { "coherence.\(storeIdentifier.uuidString.lowercased())" }

    /// The payload of a commit's notification.
    static func payload(sender: String, token: PersistentHistoryToken?) -> String {
        token.map { "\(sender) \($0.transactionNumber)" } ?? sender
    }

    /// Connects and listens (so that commits after this returns are heard), without starting
    /// the thread yet.
    /// - Throws: a ``PostgreSQLError`` when the connection or `LISTEN` fails, or the pipe cannot
    ///   be made.
    init(
        configuration: PostgreSQLConfiguration, storeIdentifier: UUID, sender: String,
        onChange: @escaping @Sendable (PersistentHistoryToken?) -> Void
    ) throws(PostgreSQLError) {
        self.configuration = configuration
        self.storeIdentifier = storeIdentifier
        self.channel = Self.channel(of: storeIdentifier)
        self.sender = sender
        self.onChange = onChange
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw PostgreSQLError(message: "Cannot make a pipe for the remote-change listener.", location: configuration.redactedURL)
        }
        wake = (fds[0], fds[1])
        do {
            connection = try Self.listen(configuration, channel: channel)
        } catch {
            close(wake.read)
            close(wake.write)
            throw error
        }
    }

    deinit {
        connection?.close()
        close(wake.read)
        close(wake.write)
    }

    private static func listen(_ configuration: PostgreSQLConfiguration, channel: String) throws(PostgreSQLError) -> PostgreSQLConnection {
        let c = try PostgreSQLConnection(configuration)
        try c.execute("LISTEN \(SQLDialect.postgreSQL.quote(channel))")
        return c
    }

    /// Starts the listening thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "Coherence PostgreSQL listener"
        thread.start()
    }

    /// Stops listening: the thread ends soon after (no change is reported after it has seen the
    /// stop).
    func stop() {
        let first = stopped.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        if first {
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
    }

    private var isStopped: Bool { stopped.withLock { $0 } }

    private func run() {
        while !isStopped {
            guard let c = connection, let socket = c.socket else {
                reconnect()
                continue
            }
            var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            if isStopped || fds[1].revents != 0 { break }
            let received = c.notifications()
            if !c.isOpen {
                c.close()
                connection = nil
                continue
            }
            var others = false
            var token: PersistentHistoryToken?
            for n in received where n.channel == channel {
                let parts = n.payload.split(separator: " ", maxSplits: 1)
                guard parts.first.map(String.init) != sender else { continue }
                others = true
                token =
                    parts.count > 1
                    ? Int64(parts[1]).map { PersistentHistoryToken(storeIdentifier: storeIdentifier, transactionNumber: $0) } : nil
            }
            if others && !isStopped { onChange(token) }
            handled.withLock { $0 += received.filter { $0.channel == channel }.count }
        }
        connection?.close()
        connection = nil
    }

    /// Connects again (waiting half a second between tries, or until stopped); reports one
    /// change once it listens again.
    private func reconnect() {
        connection?.close()
        connection = nil
        while !isStopped {
            if let c = try? Self.listen(configuration, channel: channel) {
                connection = c
                if !isStopped { onChange(nil) }
                return
            }
            var fds = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, 500)
        }
    }
}
