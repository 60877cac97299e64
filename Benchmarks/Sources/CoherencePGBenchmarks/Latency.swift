import BenchmarkSupport
import Coherence
import CoherencePostgreSQL
import Foundation

// L1: the latency of a remote change between two processes. A child process (this executable
// with --latency-child) saves one object at a time into a PostgreSQL store; this process, with the
// same store open, hears each commit as a NOTIFY and posts `persistentStoreRemoteChange`. The time
// from the child's `save()` returning to the notification here, over many rounds (each save asked
// for once the one before was heard).

/// The options of a store whose commits other coordinators hear.
let remoteOptions = StoreOptions(remoteChangeNotificationPost: true)

/// The child: a writer on the store at `url`.
func latencyChild(_ url: String) throws {
    guard let url = URL(string: url) else { throw BenchmarkError("bad store URL") }
    let c = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
    try c.addPersistentStore(type: .postgreSQL, at: url, options: remoteOptions)
    try writerChild(c)
}

func latency(_ o: Options, _ server: Server) throws -> WorkloadResult {
    var result = WorkloadResult(name: "L1", title: "remote change across processes, \(o.rounds) saves")
    let schema = "bench_latency"
    try RawPG(server, schema: "public").exec("DROP SCHEMA IF EXISTS \(schema) CASCADE")
    let url = server.storeURL(schema: schema)
    let listener = PersistentStoreCoordinator(managedObjectModel: benchmarkModel)
    try listener.addPersistentStore(type: .postgreSQL, at: url, options: remoteOptions)
    defer { for store in listener.persistentStores { try? listener.remove(store) } }
    let arrivals = Arrivals(of: .persistentStoreRemoteChange, from: listener)
    guard let run = try childLatencies(child: ["--latency-child", url.absoluteString], commits: o.rounds, pause: 0, arrivals: arrivals)
    else {
        result.note = "the writer process did not start"
        return result
    }
    result.times["coherence"] = run.fromReturn
    let fromReturn = percentiles(run.fromReturn), fromStart = percentiles(run.fromStart), saves = percentiles(run.saves)
    result.note = String(
        format: "save returned → notification: median %.2f ms, p95 %.2f ms, max %.2f ms (target median ≤ 20 ms); "
            + "from the save's start: median %.2f ms, p95 %.2f ms; the save itself: median %.2f ms; missed %d",
        fromReturn(0.5) * 1000, fromReturn(0.95) * 1000, fromReturn(1) * 1000, fromStart(0.5) * 1000, fromStart(0.95) * 1000,
        saves(0.5) * 1000, run.missed)
    return result
}

/// Prints the table and the JSON line.
func report(_ results: [WorkloadResult], options: Options) {
    let impls = ["coherence", "libpq", "fluent", "nio"]
    func f(_ v: Double?) -> String { v.map { String(format: "%.2f ms", $0 * 1000) } ?? "-" }
    func r(_ v: Double?) -> String { v.map { String(format: "%.2f×", $0) } ?? "-" }
    func pad(_ s: String, _ n: Int) -> String { s.padding(toLength: n, withPad: " ", startingAt: 0) }
    print("")
    print(
        pad("workload", 46) + pad("Coherence (med / min)", 26) + pad("libpq (med)", 14) + pad("Fluent (med)", 14) + pad("NIO (med)", 14)
            + pad("C/libpq", 9) + pad("C/Fluent", 9) + "C/NIO")
    for w in results {
        let c = "\(f(w.median("coherence"))) / \(f(w.min("coherence")))"
        print(
            pad("\(w.name) \(w.title)", 46) + pad(c, 26) + pad(f(w.median("libpq")), 14) + pad(f(w.median("fluent")), 14)
                + pad(f(w.median("nio")), 14) + pad(r(w.ratio("coherence", "libpq")), 9) + pad(r(w.ratio("coherence", "fluent")), 9)
                + r(w.ratio("coherence", "nio")) + (w.note.isEmpty ? "" : "  " + w.note))
    }
    var json: [String: Any] = [
        "date": ISO8601DateFormatter().string(from: Date()), "scale": options.scale, "repetitions": options.repetitions
    ]
    var items: [[String: Any]] = []
    for w in results {
        var item: [String: Any] = ["workload": w.name, "unit": w.unit]
        for impl in impls {
            if let m = w.median(impl) { item["\(impl)_median"] = m }
            if let m = w.min(impl) { item["\(impl)_min"] = m }
            if impl != "coherence", let x = w.ratio("coherence", impl) { item["ratio_\(impl)"] = x }
        }
        if w.name == "L1" { item["p95"] = percentiles(w.times["coherence"] ?? [])(0.95) }
        items.append(item)
    }
    json["results"] = items
    if let data = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), let text = String(data: data, encoding: .utf8)
    {
        print("")
        print("JSON: \(text)")
    }
}
