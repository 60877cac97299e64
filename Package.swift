// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Coherence",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "Coherence", targets: ["Coherence"]),
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
        .executableTarget(
            name: "QuickStart",
            dependencies: ["Coherence"],
            path: "Examples/QuickStart"
        ),
        .executableTarget(
            name: "ContextsDemo",
            dependencies: ["Coherence"],
            path: "Examples/ContextsDemo"
        ),
        .testTarget(
            name: "CoherenceTests",
            dependencies: ["Coherence"],
            path: "Tests/CoherenceTests",
            resources: [.copy("Resources/HR.xcdatamodeld")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
