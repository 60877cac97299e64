import Coherence
import CoherencePostgreSQL
import Foundation

// Scaling out: the same model and contexts on PostgreSQL, shared by several app instances.
// `swift run ScaleOutDemo postgresql://user@host:5432/database` (or the URL in
// COHERENCE_POSTGRES_URL) opens two containers on one store in the schema `scaleout_demo`, as two
// instances of a server behind a load balancer would: one saves orders, the other reads them,
// and both bump one counter with the error merge policy, retrying on a conflict, without
// losing an increment. Without a URL it says how to start a server and exits.

final class Order: ManagedObject {
    @Attribute var number: Int = 0
    @Attribute var customer: String = ""
    @Attribute var instance: String = ""
}

final class Counter: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var value: Int = 0
}

let environmentKeys = ["COHERENCE_POSTGRES_URL", "COHERENCE_TEST_POSTGRES_URL"]
let arguments = CommandLine.arguments.dropFirst()
guard
    let serverText = arguments.first
        ?? environmentKeys.lazy.compactMap({ ProcessInfo.processInfo.environment[$0] }).first(where: { !$0.isEmpty })
else {
    print(
        """
        ScaleOutDemo needs a PostgreSQL server: pass its URL as the argument or in COHERENCE_POSTGRES_URL.
          swift run ScaleOutDemo postgresql://user@localhost:5432/database
        A throw-away server on a Unix socket (needs PostgreSQL's server programs: apt-get install postgresql):
          eval "$(.ci/postgres start)"        # sets COHERENCE_TEST_POSTGRES_URL
          swift run ScaleOutDemo
          .ci/postgres stop
        No server given: nothing to do.
        """)
    exit(0)
}

/// The server URL with the demo's schema.
func storeURL(_ text: String) throws -> URL {
    guard var components = URLComponents(string: text) else { throw CoherenceError(.invalidRequest, "'\(text)' is not a URL.") }
    components.queryItems =
        (components.queryItems ?? []).filter { $0.name != "schema" } + [URLQueryItem(name: "schema", value: "scaleout_demo")]
    guard let url = components.url else { throw CoherenceError(.invalidRequest, "'\(text)' is not a URL.") }
    return url
}

/// One app instance: a container on the shared store.
func instance(_ name: String, model: ManagedObjectModel, url: URL) throws -> GenericConnect<ContextStrategy.Direct> {
    let connect = GenericConnect<ContextStrategy.Direct>(name: name, managedObjectModel: model)
    try connect.attachPersistentStore(for: StoreConfiguration(type: .postgreSQL, location: url))
    try connect.start()
    return connect
}

/// Adds 1 to the shared counter: fetch, increment, save; a version conflict (another instance
/// saved in between) is answered by starting again from the stored value.
@Sendable func increment(_ connect: GenericConnect<ContextStrategy.Direct>) throws -> Int {
    var retries = 0
    while true {
        let context = connect.newBackgroundContext()
        context.mergePolicy = .error
        do {
            try context.performAndWait {
                guard let counter = try context.fetch(FetchRequest<Counter>(predicate: #Predicate { $0.name == "orders" })).first else {
                    throw CoherenceError(.invalidRequest, "The counter is missing.")
                }
                counter.value += 1
                try context.save()
            }
            return retries
        } catch let error as CoherenceError where error.code == .conflict && retries < 100 {
            retries += 1
        }
    }
}

do {
    let url = try storeURL(serverText)
    let model = try ManagedObjectModel(types: [Order.self, Counter.self])

    // 1. Two instances open the same store (the schema is made by whichever comes first).
    let east = try instance("east", model: model, url: url)
    let west = try instance("west", model: model, url: url)
    defer {
        try? east.stop()
        try? west.stop()
    }
    let shown = east.persistentStoreCoordinator.persistentStores.first?.url?.absoluteString ?? ""
    print("1. Two instances attached the store \(shown)")

    // Start from an empty store with one counter (the demo's schema is its own).
    let reset = east.newBackgroundContext()
    try reset.performAndWait {
        for o in try reset.fetch(FetchRequest<Order>()) { reset.delete(o) }
        for c in try reset.fetch(FetchRequest<Counter>()) { reset.delete(c) }
        Counter(context: reset).name = "orders"
        try reset.save()
    }

    // 2. East saves orders; west reads them from the server.
    let eastContext = east.newBackgroundContext()
    try eastContext.performAndWait {
        for (n, customer) in ["Ada", "Grace", "Edsger"].enumerated() {
            let order = Order(context: eastContext)
            order.number = n + 1
            order.customer = customer
            order.instance = "east"
        }
        try eastContext.save()
    }
    let westContext = west.newBackgroundContext()
    let seen = try westContext.performAndWait {
        try westContext.fetch(FetchRequest<Order>(sortBy: [SortDescriptor(\.number)])).map { "#\($0.number) \($0.customer)" }
    }
    print("2. East saved 3 orders; west fetched: \(seen.joined(separator: ", "))")

    // 3. Both bump one counter at once; row versions turn a lost update into a conflict, which
    //    each retries.
    let rounds = 50
    let retries = LockedCount()
    let failures = LockedCount()
    DispatchQueue.concurrentPerform(iterations: 2 * rounds) { i in
        do {
            retries.add(try increment(i.isMultiple(of: 2) ? east : west))
        } catch {
            failures.add(1)
            print("   increment failed: \(error)")
        }
    }
    let total = try westContext.performAndWait {
        try westContext.fetch(FetchRequest<Counter>(predicate: #Predicate { $0.name == "orders" })).first?.value ?? 0
    }
    print("3. \(2 * rounds) increments from two instances: counter = \(total) (\(retries.value) conflicts retried)")
    guard total == 2 * rounds, failures.value == 0 else {
        print("   Expected \(2 * rounds): something was lost.")
        exit(1)
    }
    print("   Done. The schema scaleout_demo stays on the server; drop it with DROP SCHEMA scaleout_demo CASCADE.")
} catch {
    print("ScaleOutDemo could not run against the server: \(error)")
    print("Check the URL (postgresql://user@host:port/database) and that the server is running.")
    exit(1)
}

/// A counter shared by the increments running in parallel.
final class LockedCount: @unchecked Sendable {
    // @unchecked Sendable: `count` is read and written under `lock` only.
    private let lock = NSLock()
    private var count = 0
    func add(_ n: Int) { lock.withLock { count += n } }
    var value: Int { lock.withLock { count } }
}
