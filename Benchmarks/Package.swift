// swift-tools-version:6.0
import PackageDescription

// A separate package so that its dependencies never reach users of Coherence: GRDB beside the
// SQLite store; Fluent and PostgresNIO (and libpq itself) beside the PostgreSQL store.
// Run: swift run -c release --package-path Benchmarks CoherenceBenchmarks
//      swift run -c release --package-path Benchmarks CoherencePGBenchmarks   (needs a server)
let package = Package(
    name: "CoherenceBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Coherence", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/vapor/fluent-kit", exact: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver", exact: "2.14.0"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2")
    ],
    targets: [
        // What both benchmark executables share: the Coherence model and data, timing, interleaving,
        // results, the child processes of the latency workloads.
        .target(
            name: "BenchmarkSupport", dependencies: [.product(name: "Coherence", package: "Coherence")],
            path: "Sources/BenchmarkSupport"),
        .executableTarget(
            name: "CoherenceBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "Coherence", package: "Coherence"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift")
            ]
        ),
        // libpq for the hand-written side of the PostgreSQL benchmarks.
        .systemLibrary(
            name: "CBenchLibPQ",
            path: "Sources/CBenchLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // The same workloads on PostgreSQL: Coherence's PostgreSQL store against raw libpq,
        // Fluent and PostgresNIO.
        .executableTarget(
            name: "CoherencePGBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                "CBenchLibPQ",
                .product(name: "Coherence", package: "Coherence"),
                .product(name: "CoherencePostgreSQL", package: "Coherence"),
                .product(name: "FluentKit", package: "fluent-kit"),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
                .product(name: "PostgresNIO", package: "postgres-nio")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
