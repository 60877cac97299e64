// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Coherence",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)],
    products: [
        .library(name: "Coherence", targets: ["Coherence"]),
        // The PostgreSQL store, a separate product: only its users need libpq.
        .library(name: "CoherencePostgreSQL", targets: ["CoherencePostgreSQL"])
    ],
    targets: [
        // The system SQLite C library, behind a prefixed module with a shim header for the
        // variadic `sqlite3_config` / `sqlite3_db_config` calls and the SQLITE_TRANSIENT macro.
        .systemLibrary(
            name: "CCoherenceSQLite",
            path: "Sources/CCoherenceSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // The system libpq C library (PostgreSQL's client), for the PostgreSQL store only: the
        // `Coherence` product and its targets do not depend on it.
        .systemLibrary(
            name: "CCoherencePostgreSQL",
            path: "Sources/CCoherencePostgreSQL",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // The library's layers, each a target whose dependencies point only down (see
        // Documentation/Architecture.md). `Coherence` re-exports the layers below it, so users
        // write one `import Coherence`.
        // Locks, logging and the few unsafe constructs, fenced in one place.
        .target(name: "CoherenceBase", path: "Sources/CoherenceBase"),
        // The SQLite C API behind Swift types, and the stored form of values.
        .target(name: "CoherenceSQLite", dependencies: ["CCoherenceSQLite", "CoherenceBase"], path: "Sources/CoherenceSQLite"),
        // The model, the query form and its SQL, the stores and the coordinator.
        .target(name: "CoherenceStore", dependencies: ["CoherenceSQLite"], path: "Sources/CoherenceStore"),
        // Managed objects, contexts, fetch requests and predicates.
        .target(name: "CoherenceContext", dependencies: ["CoherenceStore"], path: "Sources/CoherenceContext"),
        // The container (`GenericConnect`, strategies, stores at run time) and actions.
        .target(name: "Coherence", dependencies: ["CoherenceContext"], path: "Sources/Coherence"),
        // The PostgreSQL store (`StoreType.postgreSQL`) and its libpq layer: a separate product.
        .target(
            name: "CoherencePostgreSQL", dependencies: ["CoherenceStore", "CCoherencePostgreSQL"],
            path: "Sources/CoherencePostgreSQL"),
        // Examples: `swift run <name>`.
        .target(name: "CoherenceExampleSupport", dependencies: ["Coherence"], path: "Examples/Support"),
        .executableTarget(name: "QuickStart", dependencies: ["Coherence", "CoherenceExampleSupport"], path: "Examples/QuickStart"),
        .executableTarget(name: "ContextsDemo", dependencies: ["Coherence"], path: "Examples/ContextsDemo"),
        .executableTarget(name: "QueryGenerationsDemo", dependencies: ["Coherence"], path: "Examples/QueryGenerationsDemo"),
        .executableTarget(name: "ImportDemo", dependencies: ["Coherence"], path: "Examples/ImportDemo"),
        .executableTarget(name: "ActionsDemo", dependencies: ["Coherence", "CoherenceExampleSupport"], path: "Examples/ActionsDemo"),
        .executableTarget(name: "StartupDefault", dependencies: ["Coherence", "CoherenceExampleSupport"], path: "Examples/StartupDefault"),
        .executableTarget(
            name: "StartupConfigurations", dependencies: ["Coherence", "CoherenceExampleSupport"],
            path: "Examples/StartupConfigurations"),
        .executableTarget(name: "StartupPerUser", dependencies: ["Coherence", "CoherenceExampleSupport"], path: "Examples/StartupPerUser"),
        .executableTarget(
            name: "StartupGlobalThenUser", dependencies: ["Coherence", "CoherenceExampleSupport"],
            path: "Examples/StartupGlobalThenUser"),
        .executableTarget(name: "HistoryDemo", dependencies: ["Coherence"], path: "Examples/HistoryDemo"),
        .executableTarget(name: "HistoryKitDemo", dependencies: ["Coherence"], path: "Examples/HistoryKitDemo"),
        .executableTarget(name: "MigrationDemo", dependencies: ["Coherence"], path: "Examples/MigrationDemo"),
        .executableTarget(
            name: "DataStackDemo", dependencies: ["Coherence"], path: "Examples/DataStackDemo",
            resources: [.copy("School.xcdatamodeld")]),
        .executableTarget(name: "ScaleOutDemo", dependencies: ["Coherence", "CoherencePostgreSQL"], path: "Examples/ScaleOutDemo"),
        // A second process for the remote-change tests (launched by them; not a product).
        .executableTarget(name: "CoherenceTestWriter", dependencies: ["Coherence"], path: "Tests/CoherenceTestWriter"),
        // An author process for the history-kit tests (launched by them; not a product).
        .executableTarget(
            name: "CoherenceKitAuthor", dependencies: ["Coherence", "CoherencePostgreSQL"], path: "Tests/CoherenceKitAuthor"),
        // A client process for the PostgreSQL reliability tests (launched by them; not a product).
        .executableTarget(
            name: "CoherencePGClient", dependencies: ["Coherence", "CoherencePostgreSQL"], path: "Tests/CoherencePGClient"),
        .testTarget(
            name: "CoherenceTests",
            dependencies: ["Coherence", "CoherencePostgreSQL"],
            path: "Tests/CoherenceTests",
            resources: [
                .copy("Resources/HR.xcdatamodeld"),
                .copy("Resources/Roster.xcdatamodeld"),
                .copy("Resources/CoreDataMade"),
                .copy("Resources/Campus.xcdatamodeld")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
