import Foundation
import Testing
@testable import CoherenceStore

/// A PostgreSQL cluster a test starts, stops and restarts itself, in a short directory of its
/// own (never the shared test server): on a Unix socket, on a TCP address, or inside a network
/// namespace. As root the server runs as `nobody` (initdb refuses root), as `.ci/postgres` does.
final class PostgreSQLTestCluster {
    let directory: URL
    /// The TCP address the server listens on (nil: the Unix socket in ``directory`` only).
    let address: String?
    let port: Int
    /// The network namespace the server runs in.
    let namespace: String?
    private let bin: URL
    private var running = false

    /// Makes the cluster (`initdb`); `address`: listen on it (trusting clients of its /16 too).
    init(address: String? = nil, port: Int = 5432, namespace: String? = nil) throws {
        guard let bin = Self.serverPrograms() else {
            throw CoherenceError(
                .storeOpenFailed, "PostgreSQL's server programs (initdb, pg_ctl) are not installed: apt-get install postgresql")
        }
        self.bin = bin
        self.address = address
        self.port = port
        self.namespace = namespace
        // Short: a Unix socket path holds at most 107 bytes.
        directory = URL(fileURLWithPath: "/tmp/cpg-\(UUID().uuidString.prefix(8).lowercased())", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if getuid() == 0 { try Self.run(["/bin/chown", "nobody", directory.path]) }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        try runAsOwner([
            bin.appendingPathComponent("initdb").path, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"
        ])
        if let address {
            let parts = address.split(separator: ".")
            if parts.count == 4 {
                let hba = directory.appendingPathComponent("data/pg_hba.conf")
                let line = "host all all \(parts[0]).\(parts[1]).0.0/16 trust\n"
                let handle = try FileHandle(forWritingTo: hba)
                handle.seekToEndOfFile()
                handle.write(Data(line.utf8))
                try handle.close()
            }
        }
    }

    deinit {
        if running { try? runAsOwner([bin.appendingPathComponent("pg_ctl").path, "-D", data, "-m", "immediate", "-w", "stop"]) }
        try? FileManager.default.removeItem(at: directory)
    }

    private var data: String { directory.appendingPathComponent("data").path }

    /// The server's URL, with the store in `schema`.
    func url(schema: String) -> URL? {
        let host = address.map { "\($0):\(port)" } ?? ""
        let socket = address == nil ? "&host=\(directory.path)" : ""
        return URL(string: "postgresql://postgres@\(host)/postgres?schema=\(schema)\(socket)")
    }

    /// Starts the server and waits until it accepts connections.
    func start() throws {
        let listen = address.map { "-c listen_addresses=\($0)" } ?? "-c listen_addresses=''"
        try runAsOwner([
            bin.appendingPathComponent("pg_ctl").path, "-D", data, "-l", directory.appendingPathComponent("server.log").path, "-w", "-t",
            "60",
            "-o", "-k \(directory.path) \(listen) -p \(port) -c max_connections=50", "start"
        ])
        running = true
    }

    /// Stops the server as a crash does (`pg_ctl stop -m immediate`: no shutdown checkpoint,
    /// connections cut); the next start recovers from the write-ahead log.
    func stopImmediately() throws {
        try runAsOwner([bin.appendingPathComponent("pg_ctl").path, "-D", data, "-m", "immediate", "-w", "stop"])
        running = false
    }

    /// Stops the server (`pg_ctl stop -m fast`).
    func stop() throws {
        guard running else { return }
        try runAsOwner([bin.appendingPathComponent("pg_ctl").path, "-D", data, "-m", "fast", "-w", "stop"])
        running = false
    }

    private func runAsOwner(_ command: [String]) throws {
        var c = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "nobody", "--"] + command : command
        if let namespace { c = ["/usr/sbin/ip", "netns", "exec", namespace] + c }
        try Self.run(c)
    }

    /// Runs a program to its end through `system` (which waits for that process alone; a
    /// `Process` can wait on until a server the program starts ends), with the descriptors above
    /// 2 closed so that the server holds none of this process's; a failure is an error with
    /// its output.
    @discardableResult
    static func run(_ command: [String]) throws -> String {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("cpg-run-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let script =
            "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done; exec "
            + command.map(quote).joined(separator: " ") + " </dev/null >\(quote(log.path)) 2>&1"
        let status = system("/bin/bash -c " + quote(script))
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw CoherenceError(.storeOpenFailed, "`\(command.joined(separator: " "))` failed (\(status)): \(text)")
        }
        return text
    }

    /// The directory of initdb and pg_ctl: pg_config's, the newest /usr/lib/postgresql/*/bin,
    /// or one on PATH.
    static func serverPrograms() -> URL? {
        var candidates: [URL] = []
        if let dir = try? run(["/usr/bin/env", "pg_config", "--bindir"]) {
            candidates.append(URL(fileURLWithPath: dir.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for v in versions.sorted(by: { $0.compare($1, options: .numeric) == .orderedDescending }) {
            candidates.append(URL(fileURLWithPath: "/usr/lib/postgresql/\(v)/bin"))
        }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append(URL(fileURLWithPath: String(dir)))
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("initdb").path) }
    }

    /// A cluster started on `address` (TCP) at a random port, trying other ports while the one
    /// picked is taken.
    static func started(address: String, namespace: String? = nil) throws -> PostgreSQLTestCluster {
        var lastError: (any Error)?
        for _ in 0..<5 {
            let cluster = try PostgreSQLTestCluster(address: address, port: Int.random(in: 20_000..<60_000), namespace: namespace)
            do {
                try cluster.start()
                return cluster
            } catch {
                lastError = error
            }
        }
        throw lastError ?? CoherenceError(.storeOpenFailed, "the cluster did not start")
    }
}
