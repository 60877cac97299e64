import BenchmarkSupport
import Foundation

// Coherence benchmarks: each workload three ways (Coherence, hand-written SQLite C, GRDB
// records) in one process, interleaved, 5 repetitions, medians and ratios.

let options = Options.parse(CommandLine.arguments)
selectedImplementations = options.implementations
if options.w9Child {
    try Workloads.w9Child(options)
    exit(0)
}
if let store = options.r1Child {
    try Workloads.r1Child(store: store)
    exit(0)
}
if let store = options.k1Child {
    try Workloads.r1Child(store: store, options: Workloads.kitOptions, author: "extension")
    exit(0)
}
print(
    "Coherence benchmarks — scale \(options.scale), \(options.repetitions) repetitions, \(ProcessInfo.processInfo.activeProcessorCount) cores"
)
var results: [WorkloadResult] = []
@MainActor func run(_ name: String, _ body: () throws -> WorkloadResult) rethrows {
    guard options.wants(name) else { return }
    print("running \(name)…")
    results.append(try body())
}
try run("W1") { try Workloads.w1(options) }
try run("W2") { try Workloads.w2(options) }
try run("W3") { try Workloads.w3(options) }
try run("W4") { try Workloads.w4(options) }
try run("W5") { try Workloads.w5(options) }
try run("W6") { try Workloads.w6(options) }
try run("W7") { try Workloads.w7(options) }
if options.wants("W8") {
    print("running W8…")
    results.append(try await Workloads.w8(options))
}
try run("W9") { try Workloads.w9(options) }
try run("W10") { try Workloads.w10(options) }
try run("W11") { try Workloads.w11(options) }
// Persistent history: W1, W4 and W6 with history on against off; a fetch of history.
try run("H1") { try Workloads.h1(options) }
try run("H4") { try Workloads.h4(options) }
try run("H6") { try Workloads.h6(options) }
try run("H7") { try Workloads.h7(options) }
// Batch requests against hand-written SQLite.
try run("B1") { try Workloads.b1(options) }
try run("B2") { try Workloads.b2(options) }
// Remote changes between processes.
try run("R1") { try Workloads.r1(options) }
try run("R1P") { try Workloads.r1(options, pause: 0.010) }
try run("R2") { try Workloads.r2(options) }
// Query generations: W2 pinned against unpinned; the cost of pinning and advancing.
try run("G2") { try Workloads.g2(options) }
try run("G3") { try Workloads.g3(options) }
// The history-tracking kit.
try run("K1") { try Workloads.k1(options) }
if options.wants("K2") {
    print("running K2…")
    results.append(try await Workloads.k2(options))
}
if options.wants("K3") {
    print("running K3…")
    results.append(try await Workloads.k3(options))
}
// Observation: a fetched-results controller's diff.
try run("F1") { try Workloads.f1(options) }
// The dual-coordinator container: propagation to the view context, and its cost there.
if options.wants("D1") {
    print("running D1…")
    results.append(try await Workloads.d1(options))
}
if options.wants("D2") {
    print("running D2…")
    results.append(try await Workloads.d2(options))
}
// Migrations against raw SQLite.
try run("M1") { try Workloads.m1(options) }
try run("M2") { try Workloads.m2(options) }
report(results, options: options)
