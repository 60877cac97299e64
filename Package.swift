// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Coherence",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "Coherence", targets: ["Coherence"])
    ],
    targets: [
        // The system SQLite C library, behind a prefixed module with a shim header for the
        // variadic `sqlite3_config` / `sqlite3_db_config` calls and the SQLITE_TRANSIENT macro.
        .systemLibrary(
            name: "CCoherenceSQLite",
            path: "Sources/CCoherenceSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .target(
            name: "Coherence",
            dependencies: ["CCoherenceSQLite"],
            path: "Sources/Coherence"
        ),
        // Examples: `swift run <name>`.
        .target(name: "CoherenceExampleSupport", dependencies: ["Coherence"], path: "Examples/Support"),
        .executableTarget(name: "QuickStart", dependencies: ["Coherence", "CoherenceExampleSupport"], path: "Examples/QuickStart"),
        .executableTarget(name: "ContextsDemo", dependencies: ["Coherence"], path: "Examples/ContextsDemo"),
        .executableTarget(name: "ActionsDemo", dependencies: ["Coherence", "CoherenceExampleSupport"], path: "Examples/ActionsDemo"),
        .executableTarget(name: "StartupDefault", dependencies: ["Coherence", "CoherenceExampleSupport"], path: "Examples/StartupDefault"),
        .executableTarget(
            name: "StartupConfigurations", dependencies: ["Coherence", "CoherenceExampleSupport"],
            path: "Examples/StartupConfigurations"),
        .executableTarget(name: "StartupPerUser", dependencies: ["Coherence", "CoherenceExampleSupport"], path: "Examples/StartupPerUser"),
        .executableTarget(
            name: "StartupGlobalThenUser", dependencies: ["Coherence", "CoherenceExampleSupport"],
            path: "Examples/StartupGlobalThenUser"),
        .testTarget(
            name: "CoherenceTests",
            dependencies: ["Coherence"],
            path: "Tests/CoherenceTests",
            resources: [.copy("Resources/HR.xcdatamodeld")]
        )
    ],
    swiftLanguageModes: [.v6]
)
