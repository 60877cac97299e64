// swift-tools-version:6.0
import PackageDescription

// A separate package so that its dependencies (GRDB, for side-by-side numbers) never reach users
// of Coherence. Run: swift run -c release --package-path Benchmarks CoherenceBenchmarks
let package = Package(
    name: "CoherenceBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Coherence", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0")
    ],
    targets: [
        .executableTarget(
            name: "CoherenceBenchmarks",
            dependencies: [
                .product(name: "Coherence", package: "Coherence"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
