import BenchmarkSupport
import Foundation

/// Command-line options of the PostgreSQL benchmarks.
struct Options {
    var url: String?
    var scale = 1.0
    var repetitions = 5
    var only: Set<String>?
    var rounds = 200
    /// The store URL of L1's writer process (this executable started again).
    var latencyChild: String?
    var implementations: Set<String>?

    static func parse(_ args: [String]) -> Options {
        var o = Options()
        var i = 1
        while i < args.count {
            switch args[i] {
            case "--url": i += 1; o.url = args[safe: i]
            case "--scale": i += 1; o.scale = Double(args[safe: i] ?? "") ?? 1
            case "--repetitions": i += 1; o.repetitions = max(1, Int(args[safe: i] ?? "") ?? 5)
            case "--rounds": i += 1; o.rounds = max(1, Int(args[safe: i] ?? "") ?? 200)
            case "--only": i += 1; o.only = Set((args[safe: i] ?? "").split(separator: ",").map { $0.uppercased() })
            case "--latency-child": i += 1; o.latencyChild = args[safe: i]
            case "--impl": i += 1; o.implementations = Set((args[safe: i] ?? "").split(separator: ",").map { $0.lowercased() })
            case "--help", "-h":
                print(
                    """
                    usage: CoherencePGBenchmarks [--url URL] [--scale X] [--repetitions N] [--only W1,W3,...] [--rounds N]
                      --url URL        the PostgreSQL server: postgresql://user@host:port/database (a Unix socket as
                                       ?host=/dir); default: $COHERENCE_TEST_POSTGRES_URL. Each implementation works in
                                       its own schema (bench_coherence, bench_libpq, bench_fluent, bench_nio, bench_latency),
                                       dropped and made again as the workloads need.
                      --scale X        multiply every N by X (default 1: 100,000 objects)
                      --repetitions N  repetitions per implementation (default 5)
                      --only LIST      run a subset of W1…W7 and L1 (remote-change latency between two processes)
                      --rounds N       L1's saves (default 200)
                      --impl LIST      run only some implementations (coherence,libpq,fluent,nio), e.g. to profile
                    """)
                exit(0)
            default: break
            }
            i += 1
        }
        return o
    }

    func n(_ base: Int) -> Int { max(1, Int(Double(base) * scale)) }
    func wants(_ w: String) -> Bool { only?.contains(w) ?? true }
}
