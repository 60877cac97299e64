import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// RCDataKit's stacks: BasicDataStack (by model file, by ModelVersion, older versions, history),
/// PreviewStack and TestingStack.
@Suite("Data stacks", .timeLimit(.minutes(10)))
struct DataStackTests {
    /// Saves what `body` does in a new background context of `stack` written by `author`.
    static func write(_ stack: any DataStack, as author: TransactionAuthor, _ body: (ManagedObjectContext) throws -> Void) throws {
        let context = try stack.backgroundContext(author: author)
        try context.performAndWait { () throws in
            try body(context)
            try context.save()
        }
    }

    /// The students' "id first last" of `stack`'s store (at the current version), read in a new
    /// background context.
    static func students(_ stack: any DataStack) throws -> [String] {
        let context = stack.container.newBackgroundContext()
        return try context.performAndWait { () throws in
            try context.fetch(FetchRequest<RosterStudent>()).map { "\($0.id) \($0.firstName ?? "-") \($0.lastName ?? "-")" }.sorted()
        }
    }

    /// By model file: the view context is named and authored, background contexts take their
    /// author's name, and one cannot take the view context's author.
    @Test func basicStackByModelFile() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("data/roster.sqlite")
        let stack = try BasicDataStack(RosterModel.self, storeURL: url, mainAuthor: "app")
        #expect(stack.historyTracker == nil)
        #expect(stack.container.managedObjectModel === RosterModel.model)
        #expect(stack.viewContext.name == "ViewContext")
        #expect(stack.viewContext.author() == "app")
        #expect(stack.viewContext.automaticallyMergesChangesFromParent)
        stack.container.viewContext.name = "renamed"
        #expect(stack.viewContext.name == "ViewContext")
        let store = try #require(stack.container.persistentStoreCoordinator.persistentStores.first)
        #expect(store.url?.standardizedFileURL == url.standardizedFileURL)
        #expect(!store.options.persistentHistoryTracking)

        let importer = try stack.backgroundContext(author: "importer")
        #expect(importer.name == "importer")
        #expect(importer.transactionAuthor == "importer")
        let refused = #expect(throws: CoherenceError.self) { try stack.backgroundContext(author: "app") }
        #expect(refused?.code == .invalidRequest)

        try Self.write(stack, as: "importer") { context in
            let student = RosterStudent(context: context)
            student.id = 7
            student.firstName = "Luna"
        }
        #expect(try Self.students(stack) == ["7 Luna -"])
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: url) == [.v3])
        let missing = #expect(throws: ModelError.self) {
            try BasicDataStack(ModelVersionEnumTests.MissingModel.self, storeURL: dir.file("m.sqlite"), mainAuthor: "app")
        }
        #expect(missing?.code == .modelNotFound)
    }

    /// By ModelVersion: an older `currentVersion` opens the store at that version without
    /// migrating it (and refuses a store at another version); no `currentVersion` migrates it
    /// through the enum's stages.
    @Test func versionedStackOpensOlderVersionsOrMigrates() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("roster.sqlite")
        try makeRosterV1Store(at: url)
        do {
            let old = try BasicDataStack(storeURL: url, versionKey: RosterVersion.self, currentVersion: .v1, mainAuthor: "app")
            #expect(try RosterVersion.versionsForStore(coordinator: old.container.persistentStoreCoordinator) == [.v1])
            let context = old.container.newBackgroundContext()
            let payloads = try context.performAndWait { () throws in
                try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).map { student in
                    #expect(try student.value(forKey: "isOldData") as? Bool == true)
                    return try JSONDecoder().decode(RosterPayload.self, from: try #require(student.value(forKey: "data") as? Data)).id
                }.sorted()
            }
            #expect(payloads == [1, 2, 3])
        }
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: url) == [.v1])
        let refused = #expect(throws: CoherenceError.self) {
            try BasicDataStack(storeURL: url, versionKey: RosterVersion.self, currentVersion: .v2, mainAuthor: "app")
        }
        #expect(refused?.code == .storeIncompatible)
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: url) == [.v1])

        let stack = try BasicDataStack(storeURL: url, versionKey: RosterVersion.self, mainAuthor: "app")
        #expect(try RosterVersion.versionsForStore(coordinator: stack.container.persistentStoreCoordinator) == [.v3])
        #expect(try Self.students(stack) == ["1 Harry Potter", "2 Hermione Granger", "3 Ron Weasley"])
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: url) == [.v3])
        // Naming the current version is the same as naming none.
        let again = try BasicDataStack(storeURL: url, versionKey: RosterVersion.self, currentVersion: .v3, mainAuthor: "app")
        #expect(try Self.students(again).count == 3)
    }

    /// With history options, the versioned initializer also builds the tracker (RCDataKit's
    /// forgets to): the store records history and the tracker merges another stack's saves
    /// into the view context.
    @Test func historyOptionsBuildTheTracker() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("roster.sqlite")
        let app = try BasicDataStack(
            storeURL: url, versionKey: RosterVersion.self, mainAuthor: "app", persistentHistoryOptions: PersistentHistoryTrackingOptions())
        let widget = try BasicDataStack(
            RosterModel.self, storeURL: url, mainAuthor: "widget",
            persistentHistoryOptions: PersistentHistoryTrackingOptions(maxTransactionAge: 60))
        let tracker = try #require(app.historyTracker)
        #expect(tracker.currentAuthor == "app")
        #expect(await widget.historyTracker?.maxTransactionAge == 60)
        let store = try #require(app.container.persistentStoreCoordinator.persistentStores.first)
        #expect(store.options.persistentHistoryTracking && store.options.remoteChangeNotificationPost)

        try Self.write(widget, as: "widget-importer") { context in
            let student = RosterStudent(context: context)
            student.id = 1
            student.firstName = "Neville"
        }
        // The app's view context holds the student…
        let view = app.viewContext
        let id = try await view.perform { [view] () throws -> ObjectID in
            try #require(try view.fetch(FetchRequest<RosterStudent>()).first).objectID
        }
        await tracker.startMonitoring()
        let rounds = RoundReader(tracker.engine)
        // …and the tracker merges the widget's change into it.
        try Self.write(widget, as: "widget-importer") { context in
            let student = try #require(try context.fetch(FetchRequest<RosterStudent>()).first)
            student.firstName = "Longbottom"
        }
        // Round after round (the tracker's first round may merge only the earlier insert) until
        // the view context shows the change.
        let shown = { await view.perform { [view] in (view.registeredObject(for: id) as? RosterStudent)?.firstName } }
        #expect(await rounds.until { await shown() == "Longbottom" })
        await tracker.stopMonitoring()
    }

    /// A preview stack is in memory: its own store, nothing on disk.
    @Test func previewStackIsInMemory() throws {
        let preview = try PreviewStack(RosterModel.self)
        let other = try PreviewStack(RosterModel.self, name: "Other")
        #expect(preview.container.name == "Roster")
        #expect(preview.mainContextAuthor == .viewContext)
        #expect(preview.viewContext.author() == .viewContext)
        let store = try #require(preview.container.persistentStoreCoordinator.persistentStores.first)
        #expect(store.type == .inMemory && store.url == nil)
        try Self.write(preview, as: "sample") { context in
            let student = RosterStudent(context: context)
            student.firstName = "Ginny"
        }
        #expect(try Self.students(preview) == ["0 Ginny -"])
        #expect(try Self.students(other).isEmpty)
        #expect(throws: ModelError.self) { try PreviewStack(ModelVersionEnumTests.MissingModel.self) }
    }

    /// Two testing stacks with one test name, alive together, keep their own stores; a stack's
    /// directory goes with it.
    @Test func testingStacksWithOneNameDoNotCollide() throws {
        let second: TestingStack
        let directory: URL
        do {
            let first = try TestingStack(RosterModel.self, bundle: .module, testName: "shared")
            try Self.write(first, as: "first") { RosterStudent(context: $0).firstName = "First" }
            second = try TestingStack(RosterModel.self, bundle: .module, testName: "shared")
            try Self.write(second, as: "second") { RosterStudent(context: $0).firstName = "Second" }
            #expect(first.directoryLocation != second.directoryLocation)
            #expect(first.directoryLocation.deletingLastPathComponent() == second.directoryLocation.deletingLastPathComponent())
            #expect(FileManager.default.fileExists(atPath: first.storeURL.path))
            #expect(first.storeURL.lastPathComponent == first.fileID.uuidString + ".sqlite")
            #expect(try Self.students(first) == ["0 First -"])
            #expect(try Self.students(second) == ["0 Second -"])
            directory = first.directoryLocation
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path))
        #expect(try Self.students(second) == ["0 Second -"])
    }

    /// A testing stack's test name defaults to the calling function and is one path component.
    @Test func testingStackDirectoryNames() throws {
        let named = try TestingStack(RosterModel.self, bundle: .module, testName: "a/b")
        #expect(named.directoryLocation.deletingLastPathComponent().lastPathComponent == "a_b")
        #expect(named.directoryLocation.lastPathComponent == named.fileID.uuidString)
        let unnamed = try TestingStack(RosterModel.self, bundle: .module)
        #expect(unnamed.directoryLocation.deletingLastPathComponent().lastPathComponent == "testingStackDirectoryNames()")
        #expect(unnamed.viewContext.author() == .viewContext)
    }

    /// An app's own stack type around a GenericConnect gets the named, authored view context
    /// and background contexts.
    @Test func anAppsOwnDataStack() throws {
        struct AppStack: DataStack {
            let container: any PersistentStack
            let mainContextAuthor: TransactionAuthor
        }
        let connect = GenericConnect<ContextStrategy.Mixed>(name: "Roster", managedObjectModel: RosterModel.model)
        try connect.attachPersistentStore(for: StoreConfiguration(type: .inMemory))
        let stack = AppStack(container: connect, mainContextAuthor: "app")
        #expect(stack.viewContext === connect.viewContext)
        #expect(connect.viewContext.name == "ViewContext")
        #expect(connect.viewContext.transactionAuthor == "app")
        let importer = try stack.backgroundContext(author: "importer")
        #expect(importer.name == "importer" && importer.transactionAuthor == "importer")
        #expect(importer.parent == nil)
    }

    /// Tests running in parallel, each with a testing stack of the same test name, see only
    /// their own objects.
    @Test(arguments: 1...4) func testingStacksInParallelTests(count: Int) throws {
        let stack = try TestingStack(RosterModel.self, bundle: .module, testName: "parallel")
        for n in 1...count {
            try Self.write(stack, as: "writer") { RosterStudent(context: $0).id = Int64(n) }
        }
        #expect(try Self.students(stack) == (1...count).map { "\($0) - -" })
        #expect(try RosterVersion.versionsForStore(type: .sqlite, at: stack.storeURL) == [.v3])
    }
}
