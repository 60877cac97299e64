import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// "A container that goes away detaches its stores": contexts made by the container that outlive
// it neither keep the files open nor write to them, whatever the strategy.

/// The files under `directory` this process holds open (read from /proc/self/fd).
private func openFiles(under directory: URL) -> [String] {
    let fdDirectory = "/proc/self/fd"
    let prefix = directory.resolvingSymlinksInPath().path + "/"
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + $0) }
        .filter { $0.hasPrefix(prefix) }
}

@Suite("Releasing a container closes its stores under contexts that outlive it", .timeLimit(.minutes(2)))
struct ContainerReleaseClosesStoresTests {
    /// A dual-coordinator container released while an importer context lives on: the writer
    /// coordinator's copy of the file is closed too, and the importer's save is refused.
    @Test func aReleasedDualContainerClosesItsFileUnderALiveImporter() async throws {
        let dir = try TemporaryDirectory()
        var container: DualCoordinatorContainer? = try DualCoordinatorContainer(
            managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]), storeURL: dir.file("store.sqlite"))
        let importer = try #require(container).importerContext()
        try await importer.perform {
            Town(context: importer).name = "Oslo"
            try importer.save()
        }
        weak let weakContainer = container
        container = nil
        #expect(weakContainer == nil)
        #expect(openFiles(under: dir.url).isEmpty, "\(openFiles(under: dir.url))")
        let code: CoherenceError.Code? = await importer.perform {
            Town(context: importer).name = "Bergen"
            do throws(CoherenceError) {
                try importer.save()
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code == .storeNotAttached || code == .noStoreForEntity)
        let check = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
        try check.addPersistentStore(type: .sqlite, at: dir.file("store.sqlite"))
        #expect(try check.fetchDictionaries(FetchRequest<Town>()).compactMap { $0["name"] as? String } == ["Oslo"])
    }

    /// The same with a single coordinator: a background context that outlives its container.
    @Test func aReleasedDirectContainerClosesItsFileUnderALiveBackgroundContext() async throws {
        let dir = try TemporaryDirectory()
        var container: GenericPersistentContainer<ContextStrategy.Direct>? = GenericPersistentContainer(
            name: "P", managedObjectModel: try ManagedObjectModel(types: [Town.self, Person.self, Club.self]))
        try container?.attachPersistentStore(at: dir.url)
        let bg = try #require(container).newBackgroundContext()
        try await bg.perform {
            Town(context: bg).name = "Oslo"
            try bg.save()
        }
        container = nil
        #expect(openFiles(under: dir.url).isEmpty, "\(openFiles(under: dir.url))")
        let code: CoherenceError.Code? = await bg.perform {
            Town(context: bg).name = "Bergen"
            do throws(CoherenceError) {
                try bg.save()
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code == .storeNotAttached || code == .noStoreForEntity)
    }
}
