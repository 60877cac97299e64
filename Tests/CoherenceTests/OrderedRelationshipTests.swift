import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

final class OrdPlaylist: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "playlist", deleteRule: .cascade) var songs: [OrdSong]
    override class var entityName: String { "OrdPlaylist" }
}

final class OrdSong: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "songs") var playlist: OrdPlaylist?
    override class var entityName: String { "OrdSong" }
}

/// Ordered to-many relationships kept in their destinations' foreign keys keep their order in
/// the store (an order column beside the key, Core Data's `Z_FOK_`), on every store.
@Suite("Ordered relationships")
struct OrderedRelationshipTests {
    static func model() throws -> ManagedObjectModel { try ManagedObjectModel(types: [OrdPlaylist.self, OrdSong.self]) }

    /// Every playlist's song titles in order, by playlist name, read by a new context of
    /// `coordinator`.
    static func playlists(_ coordinator: PersistentStoreCoordinator) throws -> [String: [String]] {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try reader.performAndWait {
            var result: [String: [String]] = [:]
            for p in try reader.fetch(FetchRequest<OrdPlaylist>()) { result[p.name] = p.songs.map(\.title) }
            return result
        }
    }

    /// The playlists as the store holds them: read by a new coordinator of the store (a new
    /// context of `coordinator` for an in-memory store, which lives in its coordinator).
    static func stored(_ type: StoreType, _ dir: TemporaryDirectory, _ coordinator: PersistentStoreCoordinator) throws
        -> [String: [String]]
    {
        guard type != .inMemory else { return try playlists(coordinator) }
        return try playlists(makeCoordinator(type, in: dir, model: try model()))
    }

    /// The playlist named `name` and its songs by title, fetched in `context`.
    static func playlist(_ name: String, in context: ManagedObjectContext) throws -> (OrdPlaylist, [String: OrdSong]) {
        let p = try #require(try context.fetch(FetchRequest<OrdPlaylist>(predicate: #Predicate { $0.name == name })).first)
        let songs = Dictionary(try context.fetch(FetchRequest<OrdSong>()).map { ($0.title, $0) }, uniquingKeysWith: { a, _ in a })
        return (p, songs)
    }

    /// A coordinator with playlist "p" holding songs `titles` in that order, saved.
    static func seeded(_ type: StoreType, _ dir: TemporaryDirectory, _ titles: [String]) throws -> PersistentStoreCoordinator {
        let coordinator = try makeCoordinator(type, in: dir, model: try model())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let p = OrdPlaylist(context: context)
            p.name = "p"
            p.songs = titles.map { t in
                let s = OrdSong(context: context)
                s.title = t
                return s
            }
            try context.save()
        }
        return coordinator
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aReorderIsSavedAndReadInANewContext(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.seeded(type, dir, ["a", "b", "c"])
        #expect(try Self.stored(type, dir, coordinator) == ["p": ["a", "b", "c"]])
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let (p, s) = try Self.playlist("p", in: context)
            p.songs = [s["c"]!, s["a"]!, s["b"]!]
            // Only the order changed: still a change of the playlist, saved.
            #expect(p.isUpdated)
            #expect(context.hasChanges)
            try context.save()
            #expect(p.songs.map(\.title) == ["c", "a", "b"])
        }
        #expect(try Self.stored(type, dir, coordinator) == ["p": ["c", "a", "b"]])
        // And again, the other way round, in the same context.
        try context.performAndWait {
            let (p, s) = try Self.playlist("p", in: context)
            p.songs = [s["b"]!, s["a"]!, s["c"]!]
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["p": ["b", "a", "c"]])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aSongInsertedInTheMiddleKeepsItsPlace(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.seeded(type, dir, ["a", "b", "c"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let (p, _) = try Self.playlist("p", in: context)
            let d = OrdSong(context: context)
            d.title = "d"
            var songs = p.songs
            songs.insert(d, at: 1)
            p.songs = songs
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["p": ["a", "d", "b", "c"]])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func removedSongsLeaveTheOthersInOrderAndAppendsGoLast(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.seeded(type, dir, ["a", "b", "c", "d"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let (p, s) = try Self.playlist("p", in: context)
            p.songs = [s["d"]!, s["c"]!, s["b"]!, s["a"]!]
            try context.save()
            // Removed (one deleted, one taken out): the others keep their order.
            p.songs = [s["d"]!, s["b"]!, s["a"]!]
            context.delete(s["b"]!)
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["p": ["d", "a"]])
        // Appended, in a new context and from the song's side: after the others.
        let appender = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try appender.performAndWait {
            let (p, s) = try Self.playlist("p", in: appender)
            let e = OrdSong(context: appender)
            e.title = "e"
            e.playlist = p
            s["c"]!.playlist = p
            try appender.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["p": ["d", "a", "e", "c"]])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aNewPlaylistKeepsTheOrderOfNewAndExistingSongs(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.seeded(type, dir, ["a", "b", "c"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let (_, s) = try Self.playlist("p", in: context)
            let q = OrdPlaylist(context: context)
            q.name = "q"
            let x = OrdSong(context: context), y = OrdSong(context: context)
            (x.title, y.title) = ("x", "y")
            // New songs around an existing one taken from "p".
            q.songs = [y, s["b"]!, x]
            try context.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["p": ["a", "c"], "q": ["y", "b", "x"]])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aChildContextsReorderReachesItsParentAndTheStore(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.seeded(type, dir, ["a", "b", "c"])
        let parent = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let child = ManagedObjectContext(concurrencyType: .privateQueue, parent: parent)
        try child.performAndWait {
            let (p, s) = try Self.playlist("p", in: child)
            p.songs = [s["b"]!, s["c"]!, s["a"]!]
            try child.save()
        }
        try parent.performAndWait {
            let (p, _) = try Self.playlist("p", in: parent)
            #expect(p.songs.map(\.title) == ["b", "c", "a"])
            #expect(parent.hasChanges)
            try parent.save()
        }
        #expect(try Self.stored(type, dir, coordinator) == ["p": ["b", "c", "a"]])
    }

    // MARK: Stores made before the order was kept

    /// Drops the order column of the songs' table of the store at `url`, as a store made by an
    /// earlier version is; checks that it is gone.
    static func dropOrderColumn(_ type: StoreType, at url: URL) throws {
        if type == .postgreSQL {
            let c = try PostgreSQLTestServer.connection()
            let schema = PostgreSQLTestServer.schema(of: url)
            try c.execute("ALTER TABLE \(SQLDialect.postgreSQL.quote(schema)).\"OrdSong\" DROP COLUMN \"Z_FOK_playlist\"")
            let columns = try c.execute(
                "SELECT column_name::TEXT FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'OrdSong'",
                [.text(schema)]
            ).rows.compactMap { row -> String? in
                guard case .text(let name)? = row.first else { return nil }
                return name
            }
            #expect(!columns.contains("Z_FOK_playlist") && columns.contains("playlist"))
            return
        }
        let c = try SQLiteConnection(location: .file(url.path))
        try c.execute("ALTER TABLE \"OrdSong\" DROP COLUMN \"Z_FOK_playlist\"")
        let columns = try c.prepare("SELECT name FROM pragma_table_info('OrdSong')").rows { $0.string(0) }
        #expect(!columns.contains("Z_FOK_playlist") && columns.contains("playlist"))
    }

    @Test(arguments: storedTypes)
    func aStoreWithoutTheOrderColumnGetsItWhenItOpensAndKeepsOrder(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try withMigrationStore(try Self.model(), at: url) { context in
            let p = OrdPlaylist(context: context)
            p.name = "p"
            p.songs = ["a", "b", "c"].map { t in
                let s = OrdSong(context: context)
                s.title = t
                return s
            }
            try context.save()
        }
        try Self.dropOrderColumn(type, at: url)
        // Opened by the same model (no migration): read as before (by key), then reordered.
        try withMigrationStore(try Self.model(), at: url) { context in
            let (p, s) = try Self.playlist("p", in: context)
            #expect(p.songs.map(\.title) == ["a", "b", "c"])
            p.songs = [s["c"]!, s["a"]!, s["b"]!]
            try context.save()
        }
        let order = try withMigrationStore(try Self.model(), at: url) { context in
            let (p, s) = try Self.playlist("p", in: context)
            let titles = p.songs.map(\.title)
            // An append after the numbered rows goes last.
            let d = OrdSong(context: context)
            d.title = "d"
            d.playlist = p
            _ = s
            try context.save()
            return titles
        }
        #expect(order == ["c", "a", "b"])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        try coordinator.addPersistentStore(type: type, at: url)
        #expect(try Self.playlists(coordinator) == ["p": ["c", "a", "b", "d"]])
    }

    /// The playlists model built in code, with `extra` attributes on songs.
    static func describedModel(songAttributes extra: [AttributeDescription]) throws -> ManagedObjectModel {
        try ManagedObjectModel(entities: [
            EntityDescription(
                name: "OrdPlaylist",
                properties: [
                    AttributeDescription(name: "name", type: .string, defaultValue: ""),
                    RelationshipDescription(
                        name: "songs", destination: "OrdSong", inverse: "playlist", isToMany: true, isOrdered: true, deleteRule: .cascade)
                ]),
            EntityDescription(
                name: "OrdSong",
                properties: [AttributeDescription(name: "title", type: .string, defaultValue: "")] + extra + [
                    RelationshipDescription(name: "playlist", destination: "OrdPlaylist", inverse: "songs")
                ])
        ])
    }

    @Test(arguments: storedTypes)
    func aMigrationThatRebuildsTheSongsTableKeepsTheOrder(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        let v1 = try Self.describedModel(songAttributes: [AttributeDescription(name: "rating", type: .integer64, defaultValue: 0)])
        try withMigrationStore(v1, at: url) { context in
            let p = try insertObject(context, "OrdPlaylist", ["name": "p"])
            let songs = try ["a", "b", "c"].map { try insertObject(context, "OrdSong", ["title": $0]) }
            try p.setValue([songs[1], songs[2], songs[0]], forKey: "songs")
            try context.save()
        }
        // Without `rating`, the songs' table is made again and its rows copied.
        let v2 = try Self.describedModel(songAttributes: [])
        let titles = try withMigrationStore(v2, at: url) { context in
            let p = try #require(try fetchByName(context, "OrdPlaylist").first)
            let songs = try #require(try p.value(forKey: "songs") as? [ManagedObject])
            return songs.map(\.nameValueOfTitle)
        }
        #expect(titles == ["b", "c", "a"])
    }
}

extension OrderedRelationshipTests {
    @Test(arguments: storedTypes)
    func aStagedMigrationKeepsTheOrderAndItsHandlerAppends(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        let v1 = try Self.describedModel(songAttributes: [AttributeDescription(name: "rating", type: .integer64, defaultValue: 0)])
        try withMigrationStore(v1, at: url) { context in
            let p = try insertObject(context, "OrdPlaylist", ["name": "p"])
            let songs = try ["a", "b", "c"].map { try insertObject(context, "OrdSong", ["title": $0]) }
            try p.setValue([songs[1], songs[2], songs[0]], forKey: "songs")
            try context.save()
        }
        // A custom stage (on a copy of the store: a copied schema on PostgreSQL) that rebuilds
        // the songs' table and appends a song in its handler.
        let v2 = try Self.describedModel(songAttributes: [])
        var stage = CustomMigrationStage(migratingFrom: v1, to: v2, label: "append")
        stage.didMigrateHandler = { context in
            let p = try #require(try context.fetch(FetchRequest<ManagedObject>(entityName: "OrdPlaylist")).first)
            let d = try insertObject(context, "OrdSong", ["title": "d"])
            try d.setValue(p, forKey: "playlist")
            try context.save()
        }
        let options = StoreOptions(stagedMigrationManager: StagedMigrationManager([stage]))
        let titles = try withMigrationStore(v2, at: url, options: options) { context in
            let p = try #require(try fetchByName(context, "OrdPlaylist").first)
            return try #require(try p.value(forKey: "songs") as? [ManagedObject]).map(\.nameValueOfTitle)
        }
        #expect(titles == ["b", "c", "a", "d"])
    }
}

extension ManagedObject {
    /// A song's title (for models built in code).
    fileprivate var nameValueOfTitle: String { ((try? value(forKey: "title")) as? String) ?? "" }
}

final class OrdAlbum: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "albums") var tracks: [OrdTrack]
    override class var entityName: String { "OrdAlbum" }
}

final class OrdTrack: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "tracks") var albums: Set<OrdAlbum>
    override class var entityName: String { "OrdTrack" }
}

/// Ordered many-to-many relationships (join tables) keep no order: a save that would lose it
/// is refused.
@Suite("Ordered many-to-many relationships")
struct OrderedManyToManyTests {
    static func model() throws -> ManagedObjectModel { try ManagedObjectModel(types: [OrdAlbum.self, OrdTrack.self]) }

    static func tracks(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        return try reader.performAndWait {
            try #require(try reader.fetch(FetchRequest<OrdAlbum>()).first).tracks.map(\.title)
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aSaveThatWouldLoseTheOrderFailsAndWritesNothing(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir, model: try Self.model())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let album = OrdAlbum(context: context)
            album.name = "x"
            album.tracks = ["a", "b", "c"].map { t in
                let track = OrdTrack(context: context)
                track.title = t
                return track
            }
            try context.save()
        }
        #expect(try Self.tracks(coordinator) == ["a", "b", "c"])
        let error = saveError(context) {
            let album = try! context.fetch(FetchRequest<OrdAlbum>()).first!
            let t = album.tracks
            album.tracks = [t[2], t[0], t[1]]
        }
        #expect(error?.code == .validation)
        #expect(error?.entityName == "OrdAlbum")
        #expect(error?.propertyName == "tracks")
        #expect(error?.message.contains("OrdAlbum.tracks") == true)
        #expect(try Self.tracks(coordinator) == ["a", "b", "c"])
        // Put back, and a new track appended: saved.
        try context.performAndWait {
            let album = try #require(try context.fetch(FetchRequest<OrdAlbum>()).first)
            album.tracks = album.tracks.sorted { $0.title < $1.title }
            let d = OrdTrack(context: context)
            d.title = "d"
            album.tracks.append(d)
            try context.save()
        }
        #expect(try Self.tracks(coordinator) == ["a", "b", "c", "d"])
    }
}
