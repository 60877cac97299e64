import BenchmarkSupport
import Coherence
import CoherencePostgreSQL
import Foundation

// Coherence's PostgreSQL store against hand-written libpq, Fluent and PostgresNIO: workloads W1–W7
// four ways against one server, interleaved, 5 repetitions, medians and ratios; L1, the latency of
// a remote change between two processes.

let options = Options.parse(CommandLine.arguments)
selectedImplementations = options.implementations
if let url = options.latencyChild {
    try latencyChild(url)
    exit(0)
}
guard let given = Server.given(options.url) else {
    print(
        """
        The PostgreSQL benchmarks need a server: pass --url postgresql://user@host:port/database or set
        COHERENCE_TEST_POSTGRES_URL. A throw-away one for this machine:

            eval "$(.ci/postgres start)"      # prints and sets COHERENCE_TEST_POSTGRES_URL
            swift run -c release --package-path Benchmarks CoherencePGBenchmarks
            .ci/postgres stop
        """)
    exit(2)
}
let server = try Server(given)
print(
    "Coherence PostgreSQL benchmarks — scale \(options.scale), \(options.repetitions) repetitions, "
        + "\(ProcessInfo.processInfo.activeProcessorCount) cores, server \(server.url.absoluteString)"
)
let sides = try Sides(server)
var results: [WorkloadResult] = []
@MainActor func run(_ name: String, _ body: () throws -> WorkloadResult) rethrows {
    guard options.wants(name) else { return }
    print("running \(name)…")
    results.append(try body())
}
try run("W1") { try PGWorkloads.w1(options, sides) }
try run("W2") { try PGWorkloads.w2(options, sides) }
try run("W3") { try PGWorkloads.w3(options, sides) }
try run("W4") { try PGWorkloads.w4(options, sides) }
try run("W5") { try PGWorkloads.w5(options, sides) }
try run("W6") { try PGWorkloads.w6(options, sides) }
try run("W7") { try PGWorkloads.w7(options, sides) }
try run("L1") { try latency(options, server) }
try sides.close()
report(results, options: options)
