import Foundation
import Testing
@testable import Coherence
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// The PostgreSQL store against servers the tests start themselves (``PostgreSQLTestCluster``):
/// a server stopped as by a crash in the middle of a save, and clients reaching the server over
/// TCP — on loopback, and from another network namespace joined by a veth pair where the
/// machine allows namespaces.
@Suite(.serialized) struct PostgreSQLServerFailureTests {
    let processes = PostgreSQLProcessTests()

    /// The items' names, read through `coordinator` in a new context.
    func names(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
        try processes.items(ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator))
    }

    /// The server stops as by a crash (`pg_ctl stop -m immediate`) while another process's save
    /// waits before its `COMMIT`: what was acknowledged survives, nothing of that save does, a
    /// save while the server is down fails with a typed error and changes nothing, and after the
    /// restart the same coordinator reads and saves again (the failed save's objects, kept in
    /// their context, are its retry).
    @Test(.postgreSQLServer, .timeLimit(.minutes(3))) func serverStoppedMidSaveLosesNothingAcknowledgedAndLaterSavesWork() async throws {
        let cluster = try PostgreSQLTestCluster()
        try cluster.start()
        defer { try? cluster.stop() }
        let url = try #require(cluster.url(schema: "crash"))
        let (coordinator, context) = try processes.open(url)
        try context.performAndWait {
            PGItem(context: context).name = "before"
            try context.save()
        }
        let c = try processes.client(url, ["--insert", "acknowledged", "--hang-save", "50"])
        #expect(await c.waitForLine("SAVED"))
        #expect(await c.waitForLine("COMMITTING"))
        try cluster.stopImmediately()
        await c.kill()

        let failure = context.performAndWait { () -> CoherenceError? in
            PGItem(context: context).name = "while down"
            do {
                try context.save()
                return nil
            } catch {
                return error as? CoherenceError
            }
        }
        let code = try #require(failure, "a save with the server down fails with a CoherenceError").code
        #expect([.connectionLost, .storeWriteFailed, .storeOpenFailed].contains(code), "\(String(describing: failure))")

        try cluster.start()
        #expect(try names(coordinator) == ["acknowledged", "before"])
        try context.performAndWait { try context.save() }
        try context.performAndWait {
            PGItem(context: context).name = "after"
            try context.save()
        }
        #expect(try names(coordinator) == ["acknowledged", "after", "before", "while down"])
        let (_, fresh) = try processes.open(url)
        let hung = try fresh.performAndWait { try fresh.count(for: FetchRequest<PGItem>(predicate: #Predicate { $0.name == "hung" })) }
        #expect(hung == 0)
    }

    /// Two processes on a server reached over TCP on 127.0.0.1 hear each other's commits
    /// through `LISTEN`/`NOTIFY`.
    @Test(.postgreSQLServer, .timeLimit(.minutes(2))) func twoProcessesOverLoopbackTCPSeeEachOthersChanges() async throws {
        let cluster = try PostgreSQLTestCluster.started(address: "127.0.0.1")
        defer { try? cluster.stop() }
        let url = try #require(cluster.url(schema: "loopback"))
        let (coordinator, _) = try processes.open(url)
        try await hearEachOther(url, launcher: [])
        // The connections are TCP ones, from 127.0.0.1.
        let store = try #require(coordinator.persistentStores.first?.engine as? PostgreSQLStore)
        let reader = try store.takeReader()
        defer { store.returnReader(reader) }
        let address = try reader.execute("SELECT host(inet_client_addr())").rows.first?.first
        #expect(address == .text("127.0.0.1"))
    }

    /// The same across two network namespaces joined by a veth pair: the server in one, the
    /// client processes in the other, as on two hosts.
    @Test(
        .postgreSQLServer, .enabled(if: NetworkNamespaces.available, Comment(rawValue: NetworkNamespaces.unavailableReason)),
        .timeLimit(.minutes(2)))
    func twoProcessesInAnotherNetworkNamespaceSeeEachOthersChanges() async throws {
        let link = try NetworkNamespaces()
        let cluster = try PostgreSQLTestCluster.started(address: link.serverAddress, namespace: link.server)
        defer {
            try? cluster.stop()  // before the namespaces go
            withExtendedLifetime(link) {}
        }
        let url = try #require(cluster.url(schema: "netns"))
        try await hearEachOther(url, launcher: ["/usr/sbin/ip", "netns", "exec", link.client])
    }

    /// A listening process hears a writing process's commit.
    func hearEachOther(_ url: URL, launcher: [String]) async throws {
        let listener = try WriterProcess(
            store: URL(fileURLWithPath: "/unused"), author: "client", ["--url", url.absoluteString, "--await-item", "from-writer"],
            program: "CoherencePGClient", launcher: launcher)
        #expect(await listener.waitForLine("READY"))
        let writer = try WriterProcess(
            store: URL(fileURLWithPath: "/unused"), author: "client", ["--url", url.absoluteString, "--insert", "from-writer"],
            program: "CoherencePGClient", launcher: launcher)
        #expect(await writer.waitForLine("SAVED"))
        let heard = await listener.waitForLine("HEARD")
        #expect(heard)
        let (status, errors) = await writer.finish()
        #expect(status == 0, "\(errors)")
        if heard { #expect(await listener.finish().status == 0) } else { await listener.kill() }
    }
}

/// Two network namespaces joined by a veth pair (10.231.N.1 and .2), deleted with the value.
/// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and the `ip` command.
final class NetworkNamespaces {
    let server: String
    let client: String
    let serverAddress: String

    /// Whether this machine lets the tests make network namespaces.
    static let available: Bool = {
        let probe = "coh-probe-\(getpid())"
        guard (try? PostgreSQLTestCluster.run(["/usr/sbin/ip", "netns", "add", probe])) != nil else { return false }
        _ = try? PostgreSQLTestCluster.run(["/usr/sbin/ip", "netns", "delete", probe])
        return true
    }()
    static let unavailableReason =
        "Network namespaces are not available here (`ip netns add` needs root and the ip command): the two-host variant is skipped; the loopback one runs."

    init() throws {
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        let subnet = Int.random(in: 1...254)
        server = "coh-s-\(tag)"
        client = "coh-c-\(tag)"
        serverAddress = "10.231.\(subnet).1"
        let ip = "/usr/sbin/ip"
        let serverLink = "vs\(tag)", clientLink = "vc\(tag)"
        try PostgreSQLTestCluster.run([ip, "netns", "add", server])
        try PostgreSQLTestCluster.run([ip, "netns", "add", client])
        for command in [
            ["link", "add", serverLink, "type", "veth", "peer", "name", clientLink],
            ["link", "set", serverLink, "netns", server], ["link", "set", clientLink, "netns", client],
            ["-n", server, "addr", "add", "\(serverAddress)/24", "dev", serverLink],
            ["-n", client, "addr", "add", "10.231.\(subnet).2/24", "dev", clientLink],
            ["-n", server, "link", "set", serverLink, "up"], ["-n", client, "link", "set", clientLink, "up"],
            ["-n", server, "link", "set", "lo", "up"], ["-n", client, "link", "set", "lo", "up"]
        ] {
            try PostgreSQLTestCluster.run([ip] + command)
        }
    }

    deinit {
        _ = try? PostgreSQLTestCluster.run(["/usr/sbin/ip", "netns", "delete", server])
        _ = try? PostgreSQLTestCluster.run(["/usr/sbin/ip", "netns", "delete", client])
    }
}
