import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Remote-change notifications: coordinators in this process and in child processes
/// (`CoherenceTestWriter`) committing to one SQLite store, each told of the others' commits.
///
/// Serialized: the watcher tests count the process's inotify descriptors, which only these
/// tests open.
@Suite(.serialized) struct RemoteChangeTests {
    // MARK: One process

    /// Two coordinators on one file hear each other's commits (notification and stream, with
    /// the store's URL and identifier, posted by the listening coordinator); neither hears its
    /// own.
    @Test(arguments: storedTypes)
    func twoCoordinatorsInOneProcessHearEachOther(_ type: StoreType) async throws {
        let listening = try ListeningStore(type: type)
        let url = listening.url, a = listening.coordinator, b = try listening.another()
        let heardByA = listening.heard, heardByB = RemoteChangeRecorder(b)

        try insertNote(a, author: "a")
        #expect(try await heardByB.wait { try noteCount(b) == 1 && !heardByB.notifications.withLock { $0.isEmpty } })
        #expect(await heardByB.waitForStreamed(1))
        let store = try #require(b.persistentStores.first)
        let posted = try #require(heardByB.notifications.withLock { $0.first })
        #expect(posted.object == ObjectIdentifier(b))
        // (A server store's URL as the store shows it: its password left out.)
        let storeURL = type == .sqlite ? url.standardizedFileURL : try #require(store.url)
        #expect(posted.url == storeURL)
        #expect(posted.identifier == store.identifier)
        #expect(!posted.hasToken)  // no persistent history yet
        let streamed = try #require(heardByB.streamed.withLock { $0.first })
        #expect(streamed.storeURL == storeURL)
        #expect(streamed.storeIdentifier == store.identifier)

        try insertNote(b, author: "b")
        #expect(try await heardByA.wait { try noteCount(a, author: "b") == 1 && !heardByA.notifications.withLock { $0.isEmpty } })
        // Each heard the other's one commit, not its own.
        #expect(heardByA.notifications.withLock { $0.count } == 1)
        #expect(heardByB.notifications.withLock { $0.count } == 1)
    }

    /// A coordinator's own commit wakes its watcher (it wrote the companion file), and so does
    /// a write to the companion file that does not move its commit counter: neither posts
    /// anything.
    @Test func ownCommitsAndSpuriousWakeUpsPostNothing() async throws {
        let listening = try ListeningStore()
        let url = listening.url, a = listening.coordinator, heard = listening.heard

        try insertNote(a, author: "a")
        #expect(await heard.nextCheck() == false)
        // The companion file written without a commit: its counter rewritten as it is.
        let companion = CommitCounterFile.path(forStoreAt: url)
        let counter = try Data(contentsOf: URL(fileURLWithPath: companion))
        #expect(counter.count == 16)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: companion))
        try handle.write(contentsOf: counter)
        try handle.close()
        #expect(await heard.nextCheck() == false)
        #expect(heard.notifications.withLock { $0.isEmpty })
        #expect(heard.streamed.withLock { $0.isEmpty })

        // A commit by another coordinator does post.
        let b = try remoteCoordinator(url)
        try insertNote(b, author: "b")
        #expect(try await heard.wait { !heard.notifications.withLock { $0.isEmpty } })
    }

    /// The companion file deleted while coordinators listen: the watchers watch the file made
    /// again, and later commits are still heard.
    @Test func aDeletedCompanionFileIsWatchedAgain() async throws {
        let listening = try ListeningStore()
        let url = listening.url, a = listening.coordinator, b = try listening.another(), heardByA = listening.heard
        try insertNote(b, author: "b", sequence: 1)
        #expect(try await heardByA.wait { heardByA.notifications.withLock { $0.count } == 1 })

        try FileManager.default.removeItem(atPath: CommitCounterFile.path(forStoreAt: url))
        try insertNote(b, author: "b", sequence: 2)
        #expect(try await heardByA.wait { try noteCount(a, author: "b") == 2 && heardByA.notifications.withLock { $0.count } >= 2 })
        let posted = heardByA.notifications.withLock { $0.count }
        try insertNote(b, author: "b", sequence: 3)
        #expect(try await heardByA.wait { heardByA.notifications.withLock { $0.count } > posted })
        #expect(try noteCount(a, author: "b") == 3)
        #expect(FileManager.default.fileExists(atPath: CommitCounterFile.path(forStoreAt: url)))
    }

    /// The commit counter: each increment returns the next count of the same file; a file made
    /// again gets another name, so a watcher tells it from the old one at any count.
    @Test func theCommitCounterNamesItsFile() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("store.sqlite-changes").path
        #expect(CommitCounterFile.reading(at: path) == nil)  // no file
        let first = try #require(CommitCounterFile.increment(at: path))
        let second = try #require(CommitCounterFile.increment(at: path))
        #expect(first.count == 1 && second.count == 2 && first.file == second.file && first.file != 0)
        #expect(CommitCounterFile.reading(at: path) == second)
        try FileManager.default.removeItem(atPath: path)
        let again = try #require(CommitCounterFile.increment(at: path))
        #expect(again.count == 1 && again.file != first.file)
    }

    /// A process stopped while it holds the counter's lock (here: this test holding it) does
    /// not hold up a save: the save waits a moment, commits, and its announcement is skipped;
    /// once the lock is free, commits are announced again.
    @Test func aStoppedLockHolderDoesNotBlockSaves() async throws {
        let listening = try ListeningStore()
        let b = try listening.another()
        let holder = open(CommitCounterFile.path(forStoreAt: listening.url), O_RDWR)
        #expect(holder >= 0)
        #expect(flock(holder, LOCK_EX) == 0)
        let saved = DispatchSemaphore(value: 0)
        let failure = LockedValue<String?>(nil)
        Thread {
            do { try insertNote(b, author: "b", sequence: 1) } catch { failure.withLock { $0 = "\(error)" } }
            saved.signal()
        }.start()
        let returned = await waitOffPool(saved)
        flock(holder, LOCK_UN)
        close(holder)
        #expect(returned)
        #expect(failure.withLock { $0 } == nil)
        #expect(try noteCount(listening.coordinator, author: "b") == 1)
        try insertNote(b, author: "b", sequence: 2)
        #expect(try await listening.heard.wait { !listening.heard.notifications.withLock { $0.isEmpty } })
    }

    /// How a watch counts commits: its own are left out, other coordinators' are news, and a
    /// file made again (even at the count it had seen) counts from 0.
    @Test func aWatchCountsOnlyTheOthersCommits() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        let coordinator = try remoteCoordinator(url)
        let store = try #require(coordinator.persistentStores.first)
        let watcher = try #require(coordinator.remoteChangeWatcher(for: store))
        typealias R = CommitCounterFile.Reading
        var watch = RemoteWatch(store: store, watcher: watcher, seen: R(file: 7, count: 1))
        watch.own = [R(file: 7, count: 2), R(file: 7, count: 4)]
        let own = watch.othersCommits(upTo: R(file: 7, count: 2))
        #expect(!own)
        let another = watch.othersCommits(upTo: R(file: 7, count: 4))  // 3 is another's, 4 its own
        #expect(another)
        #expect(watch.own.isEmpty)
        let spurious = watch.othersCommits(upTo: R(file: 7, count: 4))  // a wake-up without a commit
        #expect(!spurious)
        let madeAgain = watch.othersCommits(upTo: R(file: 9, count: 4))  // another file, same count
        #expect(madeAgain)
        watch.own = [R(file: 9, count: 5)]
        let ownInTheNewFile = watch.othersCommits(upTo: R(file: 9, count: 5))
        #expect(!ownInTheNewFile)
    }

    /// A remote change drops the coordinator's cached rows of the store: an object refreshed
    /// after the notification reads the other coordinator's values, not the cached ones.
    @Test(arguments: storedTypes)
    func aRemoteChangeDropsCachedRows(_ type: StoreType) async throws {
        let listening = try ListeningStore(type: type)
        let a = listening.coordinator, b = try listening.another(), heardByA = listening.heard
        try insertNote(a, author: "a")
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: a, name: "view")
        let id = try view.performAndWait { () throws -> ObjectID in
            let note = try #require(try view.fetch(FetchRequest<RemoteNote>()).first)
            view.refresh(note, mergeChanges: false)
            #expect(note.text == "a 1")  // read through the row cache
            return note.objectID
        }
        #expect(a.rowCache.entry(for: id) != nil)

        let writer = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: b, name: "b")
        try writer.performAndWait {
            for note in try writer.fetch(FetchRequest<RemoteNote>()) { note.text = "changed by b" }
            try writer.save()
        }
        #expect(try await heardByA.wait { !heardByA.notifications.withLock { $0.isEmpty } })
        #expect(a.rowCache.entry(for: id) == nil)
        let text = view.performAndWait { () -> String? in
            guard let note = view.registeredObject(for: id) as? RemoteNote else { return nil }
            view.refresh(note, mergeChanges: false)
            return note.text
        }
        #expect(text == "changed by b")
    }

    /// A row read before another writer's commit dropped its store's rows (a fault racing the
    /// notification) is not cached: it may be older than that commit.
    @Test func aRowReadBeforeTheStoreWasDroppedIsNotCached() throws {
        let entity = try #require(try ManagedObjectModel(types: [RemoteNote.self]).entity(for: RemoteNote.self))
        let store = UUID()
        let cache = RowCache()
        let id = ObjectID(entity: entity, storeIdentifier: store, primaryKey: 1)
        let old = RowCache.Entry(values: [.text("old")], version: 1)
        let readAt = cache.generation
        cache.removeAll(inStore: store)  // the remote change, while the row was being read
        cache.store(old, for: id, readAt: readAt)
        #expect(cache.entry(for: id) == nil)
        // Read after the drop: cached.
        cache.store(old, for: id, readAt: cache.generation)
        #expect(cache.entry(for: id)?.entry.version == 1)
    }

    /// The option on an in-memory store is accepted and does nothing: an in-memory store
    /// belongs to one coordinator, so no other writer exists.
    @Test func anInMemoryStoreIgnoresTheOption() throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        let store = try coordinator.addPersistentStore(type: .inMemory, options: StoreOptions(remoteChangeNotificationPost: true))
        #expect(store.options.remoteChangeNotificationPost)
        #expect(coordinator.remoteChangeWatcher(for: store) == nil)
        try insertNote(coordinator, author: "a")
        #expect(try noteCount(coordinator) == 1)
    }

    /// A container passes both options on to its store: history is tracked and the store is
    /// watched.
    @Test func aContainerPassesBothOptionsOn() throws {
        let dir = try TemporaryDirectory()
        let options = StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true)
        #expect(options.description.contains("persistentHistoryTracking: true"))
        #expect(options.description.contains("remoteChangeNotificationPost: true"))
        let container = GenericConnect<ContextStrategy.Mixed>(name: "Tracked", managedObjectModel: try makeHistoryModel())
        let store = try container.attachPersistentStore(at: dir.url, for: StoreConfiguration(options: options))
        #expect(store.options.persistentHistoryTracking && store.options.remoteChangeNotificationPost)
        #expect(store.engine.tracksHistory)
        #expect(container.persistentStoreCoordinator.remoteChangeWatcher(for: store)?.phase == .watching)
    }

    /// Without the option a coordinator has no watcher and does not write the companion file.
    @Test func withoutTheOptionNothingIsWatchedOrWritten() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [RemoteNote.self]))
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        #expect(!StoreOptions().remoteChangeNotificationPost)
        #expect(coordinator.remoteChangeWatcher(for: store) == nil)
        try insertNote(coordinator, author: "a")
        #expect(!FileManager.default.fileExists(atPath: CommitCounterFile.path(forStoreAt: url)))
    }

    // MARK: Watcher lifecycle

    /// Removing the store stops its watcher: the inotify descriptor is closed, the watcher is
    /// gone from the coordinator and later commits by others reach only coordinators still
    /// listening.
    @Test func removingTheStoreStopsTheWatcher() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        let a = try remoteCoordinator(url)
        let heardByA = RemoteChangeRecorder(a)
        let store = try #require(a.persistentStores.first)
        let watcher = try #require(a.remoteChangeWatcher(for: store))
        #expect(watcher.phase == .watching)
        // Counted by the watched file, so that watchers of parallel tests do not count.
        let companion = inode(of: CommitCounterFile.path(forStoreAt: url))
        #if os(Linux)
        #expect(inotifyDescriptorCount(watchingInode: companion) == 1)
        #endif

        try a.remove(store)
        #expect(await onOwnThread { watcher.waitUntilStopped(timeout: .now() + testGuardSeconds) })
        #expect(watcher.phase == .stopped)
        #expect(a.remoteChangeWatcher(for: store) == nil)
        #if os(Linux)
        #expect(inotifyDescriptorCount(watchingInode: companion) == 0)
        #endif

        // Another writer commits; a coordinator still listening hears it, `a` does not.
        let b = try remoteCoordinator(url), c = try remoteCoordinator(url)
        let heardByC = RemoteChangeRecorder(c)
        try insertNote(b, author: "b")
        #expect(try await heardByC.wait { try noteCount(c) == 1 && !heardByC.notifications.withLock { $0.isEmpty } })
        #expect(heardByA.notifications.withLock { $0.isEmpty })
        #expect(heardByA.checks.withLock { $0.isEmpty })
    }

    /// Commits in quick succession put the watcher in a quiet period (its source suspended);
    /// a commit by another coordinator made then is still posted, and removing the store in a
    /// quiet period still closes the descriptor.
    @Test func aQuietPeriodDelaysButLosesNothing() async throws {
        let listening = try ListeningStore()
        let a = listening.coordinator, b = try listening.another(), heardByA = listening.heard
        let store = try #require(a.persistentStores.first)
        let watcher = try #require(a.remoteChangeWatcher(for: store))
        // Own commits wake the watcher; two close together start a quiet period.
        var commits = 0
        while !watcher.isQuiet && commits < 10_000 {
            commits += 1
            try insertNote(a, author: "a", sequence: commits)
        }
        #expect(watcher.isQuiet)
        try insertNote(b, author: "b")
        #expect(try await heardByA.wait { try noteCount(a, author: "b") == 1 && !heardByA.notifications.withLock { $0.isEmpty } })
        #expect(heardByA.notifications.withLock { $0.count } == 1)

        while !watcher.isQuiet && commits < 20_000 {
            commits += 1
            try insertNote(a, author: "a", sequence: commits)
        }
        #expect(watcher.isQuiet)
        try a.remove(store)
        let released = await onOwnThread { watcher.waitUntilStopped(timeout: .now() + testGuardSeconds) }
        #expect(released)
        #expect(watcher.phase == .stopped)
    }

    /// A coordinator released while watching stops its watcher: the descriptor is closed, the
    /// watcher is freed and the coordinator's `remoteChanges` streams end.
    @Test func releasingTheCoordinatorStopsTheWatcher() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        weak var weakCoordinator: PersistentStoreCoordinator?
        weak var weakWatcher: RemoteChangeWatcher?
        var watcher: RemoteChangeWatcher?
        var reader: Task<Int, Never>?
        let streamEnded = DispatchSemaphore(value: 0)
        var companion: UInt64 = 0
        do {
            let a = try remoteCoordinator(url)
            weakCoordinator = a
            watcher = a.remoteChangeWatcher(for: try #require(a.persistentStores.first))
            companion = inode(of: CommitCounterFile.path(forStoreAt: url))
            #if os(Linux)
            #expect(inotifyDescriptorCount(watchingInode: companion) == 1)
            #endif
            weakWatcher = watcher
            let stream = a.remoteChanges
            reader = Task {
                var count = 0
                for await _ in stream { count += 1 }
                streamEnded.signal()
                return count
            }
        }
        #expect(weakCoordinator == nil)
        do {
            let stopped = try #require(watcher)
            // (Weakly: the thread may outlive the wait for a moment.)
            let released = await onOwnThread { [weak stopped] () -> Bool in
                guard let stopped else { return false }
                return stopped.waitUntilStopped(timeout: .now() + testGuardSeconds)
            }
            #expect(released)
            #expect(stopped.phase == .stopped)
        }
        #if os(Linux)
        #expect(inotifyDescriptorCount(watchingInode: companion) == 0)
        #endif
        watcher = nil
        #expect(weakWatcher == nil)
        // The stream ended (its loop returned) without any change.
        #expect(await waitOffPool(streamEnded))
        reader?.cancel()
        #expect(await reader?.value == 0)
    }

    // MARK: Other processes

    /// A child process's commits reach this process's coordinator, as notifications and as
    /// stream values, and the child's notes can be read here.
    @Test func aChildProcessCommitsReachTheParent() async throws {
        let listening = try ListeningStore()
        let url = listening.url, parent = listening.coordinator, heard = listening.heard
        let child = try WriterProcess(store: url, author: "child", ["--inserts", "5"])
        #expect(try await heard.wait { try noteCount(parent, author: "child") == 5 })
        #expect(await heard.waitForStreamed(1))
        let result = await child.finish()
        #expect(result.status == 0, "the writer failed: \(result.errors)")
        let posted = try #require(heard.notifications.withLock { $0.first })
        #expect(posted.url == url.standardizedFileURL)
        #expect(posted.identifier == parent.persistentStores.first?.identifier)
        #expect(heard.streamed.withLock { $0.allSatisfy { $0.storeURL == url.standardizedFileURL } })
    }

    /// A view context holding an object (its row cached) sees what a child process wrote once
    /// it refreshes the object after the notification.
    @Test func aViewContextRefreshesToTheChildsValues() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        let parent = try remoteCoordinator(url)
        try insertNote(parent, author: "parent")
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: parent, name: "view")
        let id = try view.performAndWait { () throws -> ObjectID in
            let note = try #require(try view.fetch(FetchRequest<RemoteNote>()).first)
            view.refresh(note, mergeChanges: false)
            #expect(note.text == "parent 1")
            return note.objectID
        }
        let heard = RemoteChangeRecorder(parent)
        let child = try WriterProcess(store: url, author: "child", ["--set-text", "written by the child"])
        #expect(await child.waitForLine("DONE"))
        #expect(try await heard.wait { !heard.notifications.withLock { $0.isEmpty } })
        #expect(await heard.waitForStreamed(1))
        let text = view.performAndWait { () -> String? in
            guard let note = view.registeredObject(for: id) as? RemoteNote else { return nil }
            view.refresh(note, mergeChanges: false)
            return note.text
        }
        #expect(text == "written by the child")
        #expect(await child.finish().status == 0)
    }

    /// Three processes write one store, each with its own author: each hears the others'
    /// commits (the children through their own notifications, `--await-others`).
    @Test func threeProcessesHearEachOther() async throws {
        let listening = try ListeningStore()
        let url = listening.url, parent = listening.coordinator, heard = listening.heard
        let first = try WriterProcess(store: url, author: "first", ["--inserts", "3", "--await-others", "6"])
        let second = try WriterProcess(store: url, author: "second", ["--inserts", "3", "--await-others", "6"])
        #expect(await first.waitForLine("READY"))
        #expect(await second.waitForLine("READY"))
        for n in 1...3 { try insertNote(parent, author: "parent", sequence: n) }
        #expect(try await heard.wait { try noteCount(parent) == 9 })
        #expect(try noteCount(parent, author: "first") == 3)
        #expect(try noteCount(parent, author: "second") == 3)
        #expect(await first.waitForLine("HEARD"))
        #expect(await second.waitForLine("HEARD"))
        let results = [await first.finish(), await second.finish()]
        for r in results { #expect(r.status == 0, "a writer failed: \(r.errors)") }
        #expect(!heard.notifications.withLock { $0.isEmpty })
    }

    /// A writer killed with SIGKILL in the middle of its saves: this process keeps saving and
    /// reading, its watcher keeps watching, and a new writer's commits are heard.
    @Test func aWriterKilledMidRunLeavesTheOthersWorking() async throws {
        let listening = try ListeningStore()
        let url = listening.url, parent = listening.coordinator, heard = listening.heard
        // Saves until killed; the third "SAVED" line is the handshake.
        let doomed = try WriterProcess(store: url, author: "doomed", ["--inserts", "0"])
        #expect(await doomed.waitForLine("SAVED 3"))
        await doomed.kill()
        #expect(doomed.process.terminationReason == .uncaughtSignal)
        #expect(doomed.process.terminationStatus == SIGKILL)

        // The parent saves and reads; every committed note of the killed writer is whole.
        try insertNote(parent, author: "parent")
        #expect(try noteCount(parent, author: "parent") == 1)
        let killedNotes = try noteCount(parent, author: "doomed")
        #expect(killedNotes >= 3)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: parent, name: "check")
        let whole = try context.performAndWait {
            try context.fetch(FetchRequest<RemoteNote>(predicate: #Predicate { $0.author == "doomed" }))
                .allSatisfy { $0.text == "doomed \($0.sequence)" }
        }
        #expect(whole)
        let store = try #require(parent.persistentStores.first)
        #expect(parent.remoteChangeWatcher(for: store)?.phase == .watching)

        // A new writer is heard.
        let notificationsBefore = heard.notifications.withLock { $0.count }
        let next = try WriterProcess(store: url, author: "next", ["--inserts", "2"])
        #expect(
            try await heard.wait {
                try noteCount(parent, author: "next") == 2 && heard.notifications.withLock { $0.count } > notificationsBefore
            })
        let result = await next.finish()
        #expect(result.status == 0, "the new writer failed: \(result.errors)")
    }

    /// Two writer processes with their own authors: each hears the other's commits and catches
    /// up from history into a view context (the other's notes merged, its own left out).
    @Test func twoProcessesCatchUpFromHistory() async throws {
        try await writersCatchUpFromHistory(["left", "right"])
    }

    /// Three writer processes: each hears the two others and catches up from history.
    @Test func threeProcessesCatchUpFromHistory() async throws {
        try await writersCatchUpFromHistory(["first", "second", "third"])
    }

    /// Writer processes, one per author, each saving three notes under its own
    /// `transactionAuthor` once every writer is listening, and catching up from history after
    /// the others' remote-change notifications (`--catch-up`); this process hears them all and
    /// its history holds each writer's transactions, with the writer's process.
    private func writersCatchUpFromHistory(_ authors: [String]) async throws {
        let listening = try ListeningStore(history: true)
        let url = listening.url, parent = listening.coordinator, heard = listening.heard
        let others = 3 * (authors.count - 1)
        let writers = try authors.map { author in
            try WriterProcess(
                store: url, author: author, ["--history", "--step", "--inserts", "3", "--catch-up", String(others)])
        }
        for w in writers { #expect(await w.waitForLine("READY")) }
        // Every writer listens now: let them save, interleaved.
        for _ in 1...3 { for w in writers { w.send() } }
        for (w, author) in zip(writers, authors) {
            let expected = authors.filter { $0 != author }.sorted().map { "\($0)=3" }.joined(separator: " ")
            #expect(await w.waitForLine("CAUGHT UP \(expected)"), "\(author) did not catch up")
        }
        let pids = writers.map { String($0.process.processIdentifier) }
        for w in writers {
            let result = await w.finish()
            #expect(result.status == 0, "a writer failed: \(result.errors)")
        }
        #expect(try await heard.wait { try noteCount(parent) == 3 * authors.count })
        #expect(!heard.notifications.withLock { $0.isEmpty })
        let history = try allHistory(parent)
        #expect(history.count == 3 * authors.count)
        for (author, pid) in zip(authors, pids) {
            let own = history.filter { $0.author == author }
            #expect(own.count == 3)
            #expect(own.allSatisfy { $0.processID == pid && $0.contextName == author && $0.changes?.count == 1 })
        }
    }

    /// A writer killed with SIGKILL inside a save — its note and its history transaction
    /// written in the open transaction, `COMMIT` not run — leaves neither: the store holds the
    /// earlier saves' notes and history, and the next save's transaction follows them.
    @Test func aWriterKilledBeforeCommitLeavesNoHistory() async throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("notes.sqlite")
        let doomed = try WriterProcess(store: url, author: "doomed", ["--history", "--inserts", "3", "--hang-before-commit"])
        #expect(await doomed.waitForLine("SAVED 3"))
        // The fourth save's transaction holds four notes and four history transactions.
        #expect(await doomed.waitForLine("COMMITTING 4 4"))
        let pid = String(doomed.process.processIdentifier)
        await doomed.kill()
        #expect(doomed.process.terminationReason == .uncaughtSignal)
        #expect(doomed.process.terminationStatus == SIGKILL)

        let c = try remoteCoordinator(url, history: true)
        #expect(try noteCount(c, author: "doomed") == 3)
        #expect(try c.count(for: FetchRequest<RemoteNote>(predicate: #Predicate { $0.sequence == 4 })) == 0)
        let history = try allHistory(c)
        #expect(history.count == 3)
        #expect(history.map(\.token.transactionNumber) == [1, 2, 3])
        #expect(history.allSatisfy { $0.author == "doomed" && $0.processID == pid && $0.changes?.count == 1 })
        let saved = Set(try c.fetchObjectIDs(FetchRequest<RemoteNote>(predicate: #Predicate { $0.author == "doomed" })))
        #expect(Set(history.compactMap { $0.changes?.first?.changedObjectID }) == saved)
        #expect(try c.currentPersistentHistoryToken()?.transactionNumber == 3)

        // The next save is recorded after them.
        try insertNote(c, author: "after")
        let after = try allHistory(c)
        #expect(after.count == 4)
        #expect(after.last?.author == "after")
        #expect(after.last?.token.transactionNumber == 4)
    }

    /// A writer that commits one save per "go" line: each commit is heard before the next is
    /// asked for, so every one of them is posted (none coalesced).
    @Test func stepByStepEveryCommitIsPosted() async throws {
        let listening = try ListeningStore()
        let url = listening.url, parent = listening.coordinator, heard = listening.heard
        let child = try WriterProcess(store: url, author: "child", ["--inserts", "4", "--step"])
        #expect(await child.waitForLine("READY"))
        for n in 1...4 {
            child.send()
            #expect(await child.waitForLine("SAVED \(n)"))
            #expect(try await heard.wait { heard.notifications.withLock { $0.count } == n })
            #expect(try noteCount(parent) == n)
        }
        #expect(await heard.waitForStreamed(4))
        #expect(await child.finish().status == 0)
    }
}
