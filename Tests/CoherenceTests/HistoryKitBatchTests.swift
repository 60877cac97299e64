import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// PersistentHistoryTrackingKit in one `GenericConnect` container whose batch importer runs
/// batch requests under an author of its own: the kit merges them into the view context and
/// cleans what every author has merged.
@Suite("History kit: batch requests in a container", .timeLimit(.minutes(10)))
struct HistoryKitBatchTests {
    /// A `Strategy` container on the notes store of a new directory (of `type`; history and
    /// remote changes on), its view context writing as "app", and the app's kit on it: the
    /// importer is a batch author (it never merges, never holds cleaning back); cleaning after
    /// every merge. The importer's batch insert, update and delete, run in the context
    /// `importer` makes (on a coordinator of the container, its author "importer"), reach the
    /// view context through the kit: the inserted objects are announced, registered objects show
    /// the new values, deleted ones leave; after each merge the history before the app's
    /// progress is deleted.
    static func mergesAndCleans<Strategy: ContextStrategyType>(
        _ strategy: Strategy.Type, _ type: StoreType, importer: @escaping @Sendable (GenericConnect<Strategy>) -> ManagedObjectContext
    ) async throws {
        let dir = try TemporaryDirectory()
        let connect = GenericConnect<Strategy>(name: "Notes", managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        let configuration =
            type == .postgreSQL
            ? StoreConfiguration(type: .postgreSQL, location: try dir.postgreSQLURL("notes"), options: kitStoreOptions)
            : StoreConfiguration(fileName: "notes.sqlite", options: kitStoreOptions)
        try connect.attachPersistentStore(at: dir.url, for: configuration)
        let coordinator = connect.persistentStoreCoordinator, view = connect.viewContext
        view.transactionAuthor = "app"
        let kit = PersistentHistoryTrackingKit(
            container: connect, currentAuthor: "app", allAuthors: ["app", "importer"], batchAuthors: ["importer"],
            cleanStrategy: .byNotification(times: 1), logLevel: 0)
        defer { kit.stop() }
        let run = { @Sendable (step: BatchStep) throws -> BatchResult in try step.run(in: importer(connect)) }
        let rounds = RoundReader(kit.engine)
        let store = try #require(coordinator.persistentStores.first)
        func last() throws -> Int64 { try #require(try coordinator.currentPersistentHistoryToken(fromStores: [store])).transactionNumber }
        func numbers() throws -> [Int64] {
            try coordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?)).transactions.map(\.transactionNumber)
        }
        let events = GuardedStreamReader(view.events)

        // Insert: announced to the view context, which can then read the objects.
        let inserted = try await offPool { try run(.insert) }.insertedObjectIDs
        #expect(inserted.count == 3)
        let first = try last()
        let insertRound = await rounds.through(first)
        #expect(insertRound?.merged == 1)
        #expect(await events.next { $0.inserted == inserted } != nil)
        let texts = await view.perform {
            Set(inserted.compactMap { id in (try? view.existingObject(with: id) as? RemoteNote)?.text })
        }
        #expect(texts == ["imported"])

        // Update: the registered objects show the new values once the kit merged.
        #expect(try await offPool { try run(.update) }.updatedObjectIDs == inserted)
        let second = try last()
        let updateRound = await rounds.through(second)
        #expect(updateRound?.merged == 1)
        #expect(updateRound?.cleaned == 1)
        let updated = await view.perform {
            Set(inserted.compactMap { id in (view.registeredObject(for: id) as? RemoteNote)?.text })
        }
        #expect(updated == ["updated"])
        #expect(try numbers() == [second])

        // Delete: the registered objects leave the view context.
        #expect(try await offPool { try run(.delete) }.deletedObjectIDs == inserted)
        let third = try last()
        let deleteRound = await rounds.through(third)
        #expect(deleteRound?.merged == 1)
        #expect(deleteRound?.cleaned == 1)
        let left = await view.perform { inserted.filter { id in view.registeredObject(for: id).map { !$0.isDeleted } ?? false } }
        #expect(left.isEmpty)
        #expect(try numbers() == [third])
        #expect(try coordinator.historyProgress(in: store)?["app"]?.transactionNumber == third)
    }

    /// One of the importer's batch requests.
    enum BatchStep: Sendable {
        case insert, update, delete

        /// Runs it through `context` (its author the importer).
        func run(in context: ManagedObjectContext) throws -> BatchResult {
            try context.performAndWait {
                switch self {
                case .insert:
                    var insert = BatchInsertRequest<RemoteNote>(
                        objects: (1...3).map { ["author": "importer", "sequence": $0, "text": "imported"] })
                    insert.resultType = .objectIDs
                    return try context.execute(insert)
                case .update:
                    var update = BatchUpdateRequest<RemoteNote>(
                        predicate: #Predicate { $0.author == "importer" }, propertiesToUpdate: ["text": "updated"])
                    update.resultType = .objectIDs
                    return try context.execute(update)
                case .delete:
                    var delete = BatchDeleteRequest<RemoteNote>(
                        fetchRequest: FetchRequest(predicate: #Predicate { $0.author == "importer" }))
                    delete.resultType = .objectIDs
                    return try context.execute(delete)
                }
            }
        }
    }

    /// A dual-coordinator container: the importer's context is on the writer coordinator.
    @Test(arguments: storedTypes)
    func mergesAndCleansTheImportersBatchRequests(_ type: StoreType) async throws {
        try await Self.mergesAndCleans(ContextStrategy.DualCoordinator.self, type) { connect in
            let importer = connect.strategy.importerContext()
            importer.transactionAuthor = "importer"
            return importer
        }
    }

    /// A container with one coordinator: the importer's background context is on the kit's own
    /// coordinator.
    @Test(arguments: storedTypes)
    func mergesAndCleansBatchRequestsOfItsOwnCoordinator(_ type: StoreType) async throws {
        try await Self.mergesAndCleans(ContextStrategy.Direct.self, type) { $0.backgroundContext(author: "importer") }
    }

    /// RCDataKit's tracker merges the batch requests run through its own container's coordinator
    /// (recorded without an author) into the view context.
    @Test(arguments: storedTypes)
    func theTrackerMergesBatchRequestsOfItsCoordinator(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app", type: type)
        let id = try app.insert(1)
        #expect(try await app.viewText(id) == "app 1")
        let tracker = PersistentHistoryTracker(container: app.connect, currentAuthor: "app")
        await tracker.startMonitoring()
        let rounds = RoundReader(tracker.engine)
        try app.coordinator.execute(
            BatchUpdateRequest<RemoteNote>(predicate: #Predicate { $0.sequence == 1 }, propertiesToUpdate: ["text": "batch"]))
        #expect(await rounds.through(try app.lastNumber())?.merged == 1)
        #expect(try await app.registeredText(id) == "batch")
        await tracker.stopMonitoring()
    }
}
