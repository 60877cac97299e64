import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Store directories and files are the owner's alone from their first moment, and names cannot
/// move a store out of its location.
@Suite("Store files: owner-only from the start, names that stay put")
struct OwnerOnlyFilesTests {
    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }

    /// Everything under `url`, relative, sorted.
    static func contents(_ url: URL) -> [String] {
        (FileManager.default.subpaths(atPath: url.path) ?? []).sorted()
    }

    @Test(arguments: ["../escaped", "a/b", "", ".", "..", "x\u{0}y"])
    func aHostileContainerNameIsAnInvalidLocationAndCreatesNothing(_ name: String) throws {
        let dir = try TemporaryDirectory()
        let location = dir.file("stores/here")
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: name, managedObjectModel: try makeTestModel())
        let error = #expect(throws: CoherenceError.self) { try container.attachPersistentStore(at: location) }
        #expect(error?.code == .invalidLocation, "\(String(describing: error))")
        #expect(error?.message.contains("container name") == true)
        #expect(Self.contents(dir.url).isEmpty)
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
        // An in-memory store has no file: the name does not matter there.
        try container.attachPersistentStore(at: location, for: StoreConfiguration(type: .inMemory))
        // Nor with a file name of its own.
        try container.attachPersistentStore(at: location, for: StoreConfiguration(fileName: "own.sqlite"))
        #expect(
            Self.contents(dir.url) == [
                "stores", "stores/here", "stores/here/own.sqlite", "stores/here/own.sqlite-shm",
                "stores/here/own.sqlite-wal"
            ])
    }

    @Test func aConfigurationNameThatIsNotOnePathComponentIsAnInvalidLocation() throws {
        let dir = try TemporaryDirectory()
        let town = EntityDescription(name: "Town", properties: [AttributeDescription(name: "name", type: .string)])
        let model = try ManagedObjectModel(entities: [town], configurations: ["../up": ["Town"]])
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: "App", managedObjectModel: model)
        let error = #expect(throws: CoherenceError.self) {
            try container.attachPersistentStore(at: dir.file("here"), for: StoreConfiguration(name: "../up"))
        }
        #expect(error?.code == .invalidLocation)
        #expect(Self.contents(dir.url).isEmpty)
        // Names with dots that stay one component are fine.
        let dotted = GenericPersistentContainer<ContextStrategy.Direct>(name: "my.app", managedObjectModel: try makeTestModel())
        try dotted.attachPersistentStore(at: dir.file("here"))
        #expect(Self.contents(dir.url).contains("here/my.app.sqlite"))
    }

    /// The environment variable that makes the umask test do its work (in a child process).
    static let probeVariable = "COHERENCE_UMASK_PROBE_DIRECTORY"

    /// Runs in a child process whose umask is 000 (set before the process started, so no
    /// other test shares it): attaches a store at a missing location three directories deep
    /// and records the mode of everything created, seen right after the call that created it
    /// and at the end.
    static func probe(in directory: URL) throws -> String {
        let seen = LockedValue<[String]>([])
        OwnerOnlyFiles.creationObserver.withLock { observer in
            observer = { path in
                let mode = Self.mode(path).map { String($0, radix: 8) } ?? "missing"
                seen.withLock { $0.append("created \(path.dropFirst(directory.path.count)) \(mode)") }
            }
        }
        defer { OwnerOnlyFiles.creationObserver.withLock { $0 = nil } }
        let container = GenericPersistentContainer<ContextStrategy.Direct>(name: "Probe", managedObjectModel: try makeTestModel())
        let location = directory.appendingPathComponent("a/b/c")
        try container.attachPersistentStore(at: location)
        let context = container.newBackgroundContext()
        try context.performAndWait {
            Town(context: context).name = "Oslo"
            try context.save()
        }
        var lines = seen.withLock { $0 }
        for path in ["/a", "/a/b", "/a/b/c", "/a/b/c/Probe.sqlite", "/a/b/c/Probe.sqlite-wal", "/a/b/c/Probe.sqlite-shm"] {
            lines.append("final \(path) \(Self.mode(directory.path + path).map { String($0, radix: 8) } ?? "missing")")
        }
        return lines.joined(separator: "\n")
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/proc/self/exe"), "re-runs the test binary in a child process"))
    func directoriesAndFilesAreOwnerOnlyFromTheirFirstMomentUnderUmask000() throws {
        if let probeDirectory = ProcessInfo.processInfo.environment[Self.probeVariable] {
            // The child: do the work, write what was seen for the parent to check.
            let report = try Self.probe(in: URL(fileURLWithPath: probeDirectory, isDirectory: true))
            try Data(report.utf8).write(to: URL(fileURLWithPath: probeDirectory + "/report.txt"))
            return
        }
        let dir = try TemporaryDirectory()
        let log = dir.file("child-output.txt")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The umask is set in the child before the test binary starts: this process's is untouched.
        child.arguments = [
            "-c", "umask 000 && exec \"$0\" --testing-library swift-testing --filter \"$1\"", executable,
            "directoriesAndFilesAreOwnerOnlyFromTheirFirstMomentUnderUmask000"
        ]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.probeVariable] = dir.url.path
        child.environment = environment
        child.standardOutput = output
        child.standardError = output
        try child.run()
        child.waitUntilExit()
        let childOutput = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(child.terminationStatus == 0, "\(childOutput)")
        let report = try String(contentsOf: dir.file("report.txt"), encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(
            report.sorted() == [
                "created /a 700", "created /a/b 700", "created /a/b/c 700", "created /a/b/c/Probe.sqlite 600",
                "final /a 700", "final /a/b 700", "final /a/b/c 700", "final /a/b/c/Probe.sqlite 600",
                "final /a/b/c/Probe.sqlite-shm 600", "final /a/b/c/Probe.sqlite-wal 600"
            ], "\(childOutput)")
    }
}
