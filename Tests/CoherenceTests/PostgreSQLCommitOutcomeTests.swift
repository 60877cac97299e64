import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherencePostgreSQL
@testable import CoherenceStore

/// A connection lost while `COMMIT` is under way, after the server committed: the save
/// succeeded, and is reported so (it was reported as `.connectionLost`, "nothing written", and
/// the context's retry inserted its objects a second time).
@Suite(.serialized) struct PostgreSQLCommitOutcomeTests {
    let processes = PostgreSQLProcessTests()

    /// A server whose commits wait for a synchronous standby that never comes (its own
    /// cluster: the shared server's commits must not wait): the writer's `COMMIT` is in the
    /// write-ahead log — committed — while it waits; the server then ends the connection.
    @Test(.postgreSQLServer, .timeLimit(.minutes(3))) func aSaveTheServerCommittedBeforeTheConnectionWasLostSucceeds() async throws {
        let cluster = try PostgreSQLTestCluster()
        try cluster.start()
        defer { try? cluster.stop() }
        let base = try #require(cluster.url(schema: "committed"))
        let url = try #require(URL(string: base.absoluteString + "&application_name=committed_writer"))
        let admin = try PostgreSQLConnection(PostgreSQLConfiguration(url: try #require(cluster.url(schema: "public"))))
        let (coordinator, context) = try processes.open(url)
        try context.performAndWait {
            PGItem(context: context).name = "before"
            try context.save()
        }

        try admin.execute("ALTER SYSTEM SET synchronous_standby_names = 'coherence_nobody'")
        try admin.execute("SELECT pg_reload_conf()")
        // Saves until one waits for the standby (the server may take the new setting a moment
        // later: the saves before it commit at once).
        var saved: [String] = ["before"]
        let outcome = LockedValue<CoherenceError?>(nil)
        var waiting = false
        for attempt in 0..<100 where !waiting {
            let name = "grace \(attempt)"
            let done = DispatchSemaphore(value: 0)
            Thread {
                let error = context.performAndWait { () -> CoherenceError? in
                    PGItem(context: context).name = name
                    do throws(CoherenceError) { try context.save() } catch { return error }
                    return nil
                }
                outcome.withLock { $0 = error }
                done.signal()
            }.start()
            while !waiting {
                if done.wait(timeout: .now()) == .success { break }
                waiting =
                    (try admin.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'committed_writer' AND wait_event = 'SyncRep'"
                    ).firstInteger ?? 0) > 0
            }
            saved.append(name)
            if waiting {
                _ = try admin.execute(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = 'committed_writer' AND wait_event = 'SyncRep'"
                )
                #expect(await waitOffPool(done))
            } else {
                #expect(outcome.withLock { $0 } == nil)
            }
        }
        try admin.execute("ALTER SYSTEM RESET synchronous_standby_names")
        try admin.execute("SELECT pg_reload_conf()")
        try #require(waiting)

        // The save committed: it succeeded, and the context has nothing left to save.
        let error = outcome.withLock { $0 }
        #expect(error == nil, "\(String(describing: error))")
        #expect(context.performAndWait { context.hasChanges } == false)
        try context.performAndWait { try context.save() }
        #expect(try processes.items(ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)) == saved.sorted())
        // The store goes on.
        try context.performAndWait {
            PGItem(context: context).name = "after"
            try context.save()
        }
        let (_, fresh) = try processes.open(url)
        #expect(try processes.items(fresh) == (saved + ["after"]).sorted())
    }
}
