import CCoherenceSQLite
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("Stores and coordinator")
struct StoreTests {
    @Test func createsSchemaAndMetadata() throws {
        let dir = try TemporaryDirectory()
        let model = try makeTestModel()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("s.sqlite"))
        #expect(store.metadata["modelVersionHash"] == model.versionHash(forConfiguration: nil))
        #expect(store.metadata["storeUUID"] == store.identifier.uuidString)
        let c = try SQLiteConnection(location: .file(dir.file("s.sqlite").path))
        let tables = Set(try c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").rows { $0.string(0) })
        #expect(tables.isSuperset(of: ["Person", "Town", "Club", "Sample", "Shape", "Z_METADATA", "Z_PRIMARYKEY"]))
        #expect(!tables.contains("Circle"))  // single-table inheritance
        #expect(tables.contains { $0.hasPrefix("Z_Club_members") || $0.hasPrefix("Z_Person_clubs") })
        let indexes = Set(try c.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").rows { $0.string(0) })
        #expect(indexes.contains("Z_Person_age"))
        #expect(indexes.contains("Z_Town_UNIQUE_name"))
        let columns = try c.prepare("PRAGMA table_info(\"Person\")").rows { $0.string(1) }
        #expect(columns == ["Z_PK", "Z_ENT", "Z_OPT", "name", "email", "age", "score", "createdAt", "town"])
        let permissions = try FileManager.default.attributesOfItem(atPath: dir.file("s.sqlite").path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func roundTripsEveryAttributeType(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let sample = try #require(coordinator.managedObjectModel.entity(for: Sample.self))
        let blob = Data((0..<(10 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let date = Date(timeIntervalSinceReferenceDate: -1_234_567.891)
        let uuid = UUID()
        let decimal = try #require(Decimal(string: "-98765432109876543210.0123456789"))
        let values: [String: StoredValue] = [
            "i": Int.max.storedValue, "i16": Int16.min.storedValue, "i32": Int32.max.storedValue, "i64": Int64.min.storedValue,
            "d": Double.leastNonzeroMagnitude.storedValue, "f": Float.greatestFiniteMagnitude.storedValue, "b": true.storedValue,
            "s": "Ünïcødé ✓ 𝄞 \u{0301}".storedValue, "data": blob.storedValue, "date": date.storedValue, "uuid": uuid.storedValue,
            "url": URL(fileURLWithPath: "/tmp/ä b").storedValue, "decimal": decimal.storedValue
        ]
        let empty: [String: StoredValue] = ["s": "".storedValue]
        let ids = try insertObjects(coordinator, [rowInsert(sample, values), rowInsert(sample, empty)])
        let rows = try coordinator.rows(for: ids)
        coordinator.rowCache.remove(ids)
        let fresh = try coordinator.rows(for: ids)  // from the store, not the cache
        for r in [rows, fresh] {
            let full = try #require(r[ids[0]])
            let n = named(full)
            #expect(Int(storedValue: n["i"] ?? .null) == Int.max)
            #expect(Int16(storedValue: n["i16"] ?? .null) == Int16.min)
            #expect(Int32(storedValue: n["i32"] ?? .null) == Int32.max)
            #expect(Int64(storedValue: n["i64"] ?? .null) == Int64.min)
            #expect(Double(storedValue: n["d"] ?? .null) == Double.leastNonzeroMagnitude)
            #expect(Float(storedValue: n["f"] ?? .null) == Float.greatestFiniteMagnitude)
            #expect(Bool(storedValue: n["b"] ?? .null) == true)
            #expect(String(storedValue: n["s"] ?? .null) == "Ünïcødé ✓ 𝄞 \u{0301}")
            #expect(Data(storedValue: n["data"] ?? .null) == blob)
            #expect(Date(storedValue: n["date"] ?? .null) == date)
            #expect(UUID(storedValue: n["uuid"] ?? .null) == uuid)
            #expect(URL(storedValue: n["url"] ?? .null) == URL(fileURLWithPath: "/tmp/ä b"))
            #expect(Decimal(storedValue: n["decimal"] ?? .null) == decimal)
            let nils = try #require(r[ids[1]])
            #expect(named(nils)["data"] == .null)
            #expect(named(nils)["optionalInt"] == .null)
            #expect(named(nils)["s"] == .text(""))
        }
    }

    /// `Decimal.nan` is saved and read back as itself (it was stored as "NaN" and read back as
    /// nil), and sorts before every number, as Swift's `Decimal` orders it (`Decimal.nan < -1`).
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aNaNDecimalRoundTrips(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for (i, d) in [Decimal.nan, Decimal(2), Decimal(-1)].enumerated() {
                let s = Sample(context: context)
                s.i = i
                s.decimal = d
            }
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let sorted = try reader.fetch(FetchRequest<Sample>(sortBy: [SortDescriptor(\.decimal)]))
            #expect(sorted.map(\.i) == [0, 2, 1])
            #expect(sorted.first?.decimal?.isNaN == true)
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func objectIDURIRoundTrip(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let town = try #require(coordinator.managedObjectModel.entity(for: Town.self))
        let ids = try insertObjects(coordinator, [rowInsert(town, ["name": .text("Oslo")])])
        let id = try #require(ids.first)
        #expect(!id.isTemporaryID)
        let uri = id.uriRepresentation()
        #expect(uri.absoluteString.hasPrefix("x-coredata://\(id.storeIdentifier?.uuidString ?? "")/Town/p"))
        #expect(coordinator.managedObjectID(forURIRepresentation: uri) == id)
        #expect(coordinator.managedObjectID(forURIRepresentation: URL(string: "x-coredata://\(UUID().uuidString)/Town/p1")!) == nil)
        #expect(coordinator.managedObjectID(forURIRepresentation: URL(string: "https://example.com")!) == nil)
        let temp = ObjectID.temporary(for: town)
        #expect(temp.isTemporaryID)
        #expect(temp.uriRepresentation().absoluteString.hasPrefix("x-coredata:///Town/t"))
        #expect(coordinator.managedObjectID(forURIRepresentation: temp.uriRepresentation()) == nil)
        let permanent = try coordinator.obtainPermanentIDs(for: [temp, id])
        #expect(!permanent[0].isTemporaryID)
        #expect(permanent[0] != id)
        #expect(permanent[1] == id)
    }

    @Test func multiStoreRouting() throws {
        let dir = try TemporaryDirectory()
        let town = EntityDescription(name: "Town", properties: [AttributeDescription(name: "name", type: .string)])
        let note = EntityDescription(name: "Note", properties: [AttributeDescription(name: "text", type: .string)])
        let model = try ManagedObjectModel(entities: [town, note], configurations: ["Cache": ["Town"], "User": ["Note"]])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let cache = try coordinator.addPersistentStore(type: .inMemory, configuration: "Cache")
        let user = try coordinator.addPersistentStore(type: .sqlite, configuration: "User", at: dir.file("user.sqlite"))
        let ids = try insertObjects(coordinator, [rowInsert(town, ["name": .text("Rome")]), rowInsert(note, ["text": .text("hi")])])
        #expect(ids[0].storeIdentifier == cache.identifier)
        #expect(ids[1].storeIdentifier == user.identifier)
        #expect(try coordinator.count(for: FetchRequest<ManagedObject>(entityName: "Town")) == 1)
        #expect(try coordinator.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 1)
        // The user store file has only the Note table.
        let c = try SQLiteConnection(location: .file(dir.file("user.sqlite").path))
        let tables = Set(try c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").rows { $0.string(0) })
        #expect(tables.contains("Note") && !tables.contains("Town"))
        // Removing one store leaves the other working.
        try coordinator.remove(cache)
        #expect(try coordinator.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 1)
        #expect(coordinator.stores(for: town).isEmpty)
        do {
            try insertObjects(coordinator, [rowInsert(town, ["name": .text("Paris")])])
            Issue.record("no store holds Town any more")
        } catch let error as CoherenceError {
            #expect(error.code == .noStoreForEntity)
        }
        #expect(throws: CoherenceError.self) { try coordinator.remove(cache) }
    }

    @Test func sameEntitySpanningTwoStoresIsFetchedFromBoth() throws {
        let dir = try TemporaryDirectory()
        let model = try makeTestModel()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let first = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("a.sqlite"))
        let town = try #require(model.entity(for: Town.self))
        try insertObjects(coordinator, [rowInsert(town, ["name": .text("A")])])
        let second = try coordinator.addPersistentStore(type: .inMemory)
        #expect(first != second)
        // New objects go to the first store holding the entity.
        let ids = try insertObjects(coordinator, [rowInsert(town, ["name": .text("B")])])
        #expect(ids[0].storeIdentifier == first.identifier)
        #expect(try coordinator.fetchObjectIDs(FetchRequest<Town>()).count == 2)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func versionConflictsAreReportedAsData(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let person = try #require(coordinator.managedObjectModel.entity(for: Person.self))
        let id = try #require(try insertObjects(coordinator, [rowInsert(person, ["name": .text("Ada"), "age": .integer(36)])]).first)
        let loaded = try #require(try coordinator.rows(for: [id])[id])
        #expect(loaded.version == 1)
        let ageSlot = try #require(person.propertiesByName["age"]).slot
        // A first writer updates at version 1.
        var v1 = loaded.values
        v1[ageSlot] = .integer(37)
        var first = StoreChangeSet()
        first.updates = [
            RowUpdate(objectID: id, values: v1, changedSlots: [ageSlot], references: [], expectedVersion: 1, cachedValues: loaded.values)
        ]
        let r1 = try coordinator.save(first)
        #expect(r1.updatedVersions == [2])
        // A second writer still at version 1 conflicts.
        var v2 = loaded.values
        v2[ageSlot] = .integer(99)
        var second = StoreChangeSet()
        second.updates = [
            RowUpdate(objectID: id, values: v2, changedSlots: [ageSlot], references: [], expectedVersion: 1, cachedValues: loaded.values)
        ]
        do {
            _ = try coordinator.save(second)
            Issue.record("expected a version conflict")
        } catch {
            #expect(error.code == .conflict)
            let conflict = try #require(error.conflicts.first)
            #expect(conflict.kind == .version)
            #expect(conflict.objectID == id)
            #expect(conflict.oldVersion == 1)
            #expect(conflict.newVersion == 2)
            #expect(conflict.persistedSnapshot?["age"] == .integer(37))
            #expect(conflict.objectSnapshot["age"] == .integer(99))
            #expect(conflict.cachedSnapshot?["age"] == .integer(36))
        }
        // The store is unchanged by the failed save.
        coordinator.rowCache.remove([id])
        #expect(try coordinator.rows(for: [id])[id].map(named)?["age"] == .integer(37))
        // Deleting a row that moved on is a conflict too; deleted rows report version 0.
        var delete = StoreChangeSet()
        delete.deletes = [RowDelete(objectID: id, expectedVersion: 2, values: v1)]
        _ = try coordinator.save(delete)
        var late = StoreChangeSet()
        late.updates = [RowUpdate(objectID: id, values: v2, changedSlots: [ageSlot], references: [], expectedVersion: 2, cachedValues: nil)]
        do {
            _ = try coordinator.save(late)
            Issue.record("expected a conflict with a deleted row")
        } catch {
            #expect(error.conflicts.first?.newVersion == 0)
            #expect(error.conflicts.first?.persistedSnapshot == nil)
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func uniquenessConflictsNameTheConstraintAndRow(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let town = try #require(coordinator.managedObjectModel.entity(for: Town.self))
        let existing = try #require(
            try insertObjects(coordinator, [rowInsert(town, ["name": .text("Oslo"), "population": .integer(1)])]).first)
        let person = try #require(coordinator.managedObjectModel.entity(for: Person.self))
        // One good insert and one duplicate: the whole save fails and writes nothing.
        do {
            try insertObjects(coordinator, [rowInsert(person, ["name": .text("x")]), rowInsert(town, ["name": .text("Oslo")])])
            Issue.record("expected a uniqueness conflict")
        } catch let error as CoherenceError {
            #expect(error.code == .conflict)
            let conflict = try #require(error.conflicts.first)
            #expect(conflict.kind == .uniqueness)
            #expect(conflict.constraint == ["name"])
            #expect(conflict.conflictingObjectIDs == [existing])
            #expect(conflict.persistedSnapshot?["population"] == .integer(1))
        }
        #expect(try coordinator.count(for: FetchRequest<Person>()) == 0)
        #expect(try coordinator.count(for: FetchRequest<Town>()) == 1)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func relationshipsAreStoredAndLoaded(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(type, in: dir)
        let model = coordinator.managedObjectModel
        let town = try #require(model.entity(for: Town.self))
        let person = try #require(model.entity(for: Person.self))
        let club = try #require(model.entity(for: Club.self))
        let t = rowInsert(town, ["name": .text("Oslo")])
        let p1 = rowInsert(person, ["name": .text("A")], references: ["town": t.objectID])
        let p2 = rowInsert(person, ["name": .text("B")], references: ["town": t.objectID])
        let c = rowInsert(club, ["title": .text("Chess")])
        var changes = StoreChangeSet()
        changes.inserts = [t, p1, p2, c]
        let clubs = try #require(person.relationshipsByName["clubs"])
        changes.joinInserts = [JoinChange(relationship: clubs, source: p1.objectID, destination: c.objectID)]
        let result = try coordinator.save(changes)
        let permanentIDs = result.permanentIDs(for: changes)
        #expect(result.insertedIDs.count == 4)
        let townID = try #require(permanentIDs[t.objectID])
        let p1ID = try #require(permanentIDs[p1.objectID])
        let clubID = try #require(permanentIDs[c.objectID])
        let people = try #require(town.relationshipsByName["people"])
        let related = try coordinator.related(people, of: [townID])
        #expect(Set(related[townID] ?? []) == Set([p1ID, try #require(permanentIDs[p2.objectID])]))
        let members = try #require(club.relationshipsByName["members"])
        #expect(try coordinator.related(members, of: [clubID])[clubID] == [p1ID])
        #expect(try coordinator.related(clubs, of: [p1ID])[p1ID] == [clubID])
        let townRel = try #require(person.relationshipsByName["town"])
        #expect(try coordinator.related(townRel, of: [p1ID])[p1ID] == [townID])
        // Deleting the person removes its join rows.
        var delete = StoreChangeSet()
        delete.deletes = [RowDelete(objectID: p1ID, expectedVersion: 1, values: [])]
        _ = try coordinator.save(delete)
        #expect(try coordinator.related(members, of: [clubID])[clubID] == nil)
    }

    @Test func incompatibleModelIsDetected() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("s.sqlite")
        let v1 = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", properties: [AttributeDescription(name: "x", type: .string)])
        ])
        do {
            let c = PersistentStoreCoordinator(managedObjectModel: v1)
            try c.addPersistentStore(type: .sqlite, at: url)
        }
        let v2 = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", properties: [AttributeDescription(name: "x", type: .integer64)])
        ])
        let c2 = PersistentStoreCoordinator(managedObjectModel: v2)
        do {
            try c2.addPersistentStore(type: .sqlite, at: url)
            Issue.record("expected an incompatible store")
        } catch {
            // A type change that is not a widening cannot be migrated by inference.
            #expect(error.code == .migrationNotInferable)
            #expect(error.store == url.standardizedFileURL.path)
        }
        // The same model opens it again.
        let v1again = try ManagedObjectModel(entities: [
            EntityDescription(name: "A", properties: [AttributeDescription(name: "x", type: .string)])
        ])
        let c3 = PersistentStoreCoordinator(managedObjectModel: v1again)
        #expect(throws: Never.self) { try c3.addPersistentStore(type: .sqlite, at: url) }
    }

    @Test func badFilesAndLocationsGiveClearErrors() throws {
        let dir = try TemporaryDirectory()
        let model = try makeTestModel()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let good = try coordinator.addPersistentStore(type: .sqlite, at: dir.file("good.sqlite"))

        let text = dir.file("notes.txt")
        try Data(String(repeating: "this is not a database\n", count: 200).utf8).write(to: text)
        do { try coordinator.addPersistentStore(type: .sqlite, at: text); Issue.record("text file accepted") } catch {
            #expect(error.code == .storeOpenFailed)
            #expect(error.message.contains("not a SQLite database"))
        }

        do {
            try coordinator.addPersistentStore(type: .sqlite, at: dir.file("missing/dir/s.sqlite")); Issue.record("missing dir accepted")
        } catch {
            #expect(error.code == .storeOpenFailed)
            #expect(error.message.contains("does not exist"))
        }

        let foreign = dir.file("foreign.sqlite")
        let raw = try SQLiteConnection(location: .file(foreign.path))
        try raw.execute("CREATE TABLE other (x)")
        do { try coordinator.addPersistentStore(type: .sqlite, at: foreign); Issue.record("foreign db accepted") } catch {
            #expect(error.code == .storeIncompatible)
        }

        if getuid() != 0 {
            // Root ignores directory permissions; the check only means something for other users.
            let ro = dir.file("readonly")
            try FileManager.default.createDirectory(at: ro, withIntermediateDirectories: true)
            _ = chmod(ro.path, 0o500)
            defer { _ = chmod(ro.path, 0o700) }
            do {
                try coordinator.addPersistentStore(type: .sqlite, at: ro.appendingPathComponent("s.sqlite"));
                Issue.record("read-only dir accepted")
            } catch {
                #expect(error.code == .storeOpenFailed)
            }
        }

        do { try coordinator.addPersistentStore(type: .sqlite, at: dir.file("good.sqlite")); Issue.record("attached twice") } catch {
            #expect(error.code == .alreadyAttached)
        }
        // The good store still works.
        let town = try #require(model.entity(for: Town.self))
        try insertObjects(coordinator, [rowInsert(town, ["name": .text("Still fine")])])
        #expect(try coordinator.count(for: FetchRequest<Town>()) == 1)
        #expect(coordinator.persistentStores == [good])
    }

    @Test func corruptDatabaseFileGivesAClearError() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("s.sqlite")
        let model = try makeTestModel()
        do {
            let c = PersistentStoreCoordinator(managedObjectModel: model)
            try c.addPersistentStore(type: .sqlite, at: url)
        }
        // Keep the header, garble the rest.
        var bytes = try Data(contentsOf: url)
        for i in stride(from: 100, to: bytes.count, by: 7) { bytes[i] = 0xA5 }
        try bytes.write(to: url)
        try? FileManager.default.removeItem(at: URL(fileURLWithPath: url.path + "-wal"))
        try? FileManager.default.removeItem(at: URL(fileURLWithPath: url.path + "-shm"))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        do {
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            Issue.record("a corrupt file was accepted")
        } catch {
            #expect(error.code == .storeOpenFailed || error.code == .storeIncompatible)
            #expect(error.store == url.path)
        }
    }

    @Test func readersReadWhileAWriterWrites() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let town = try #require(coordinator.managedObjectModel.entity(for: Town.self))
        try insertObjects(coordinator, (0..<100).map { rowInsert(town, ["name": .text("T\($0)")]) })
        let engine = try #require(coordinator.persistentStores.first?.engine as? SQLiteStore)
        // Hold a write transaction open (as a save in progress does) and read meanwhile.
        let c = try engine.writerConnectionForSave()
        try c.execute("BEGIN IMMEDIATE")
        try c.execute(
            "INSERT INTO \"Town\" (Z_PK, Z_ENT, Z_OPT, \"name\", \"population\") VALUES (100000, \(town.entityNumber), 1, 'uncommitted', 0)"
        )
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask { try coordinator.count(for: FetchRequest<Town>()) }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(counts == [100, 100, 100, 100])  // readers see the committed state only
        try c.execute("COMMIT")
        #expect(try coordinator.count(for: FetchRequest<Town>()) == 101)
    }
}

/// A two-entity hierarchy of its own (for `aFailedFetchIsNotCounted` and
/// `aFirstRunOfAWholeTableExpectsItsLargestKey`).
class CountedShape: ManagedObject {
    @Attribute var n: Int = 0
}

final class CountedCircle: CountedShape {
    @Attribute var radius: Double = 0
}

extension StoreTests {
    /// A fetch tells its receiver how many rows to expect: the fewer of the statement's last
    /// two runs (after one run, its count). A wrong estimate changes nothing in the results.
    @Test func aFetchExpectsTheRowsOfItsLastTwoRuns() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let town = try #require(coordinator.managedObjectModel.entity(for: Town.self))
        try insertObjects(coordinator, (0..<5).map { rowInsert(town, ["name": .text("T\($0)")]) })
        let engine = try #require(coordinator.persistentStores.first?.engine as? SQLiteStore)
        let fetch = try FetchRequest<Town>().storeFetch(in: coordinator.managedObjectModel)
        func run() throws -> (expected: Int, rows: Int) {
            var expected: [Int] = []
            var rows = 0
            try engine.fetch(fetch, expecting: { expected.append($0) }, each: { _, _, _ in rows += 1 })
            #expect(expected.count == 1)  // once, before the rows
            return (expected.first ?? -1, rows)
        }
        func fetchNames() throws -> [String] {
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            return try context.performAndWait { try context.fetch(FetchRequest<Town>()).map(\.name).sorted() }
        }
        #expect(try run() == (5, 5))  // a first run of a whole table: its largest key
        #expect(try run() == (5, 5))  // one run known: its count
        #expect(try run() == (5, 5))
        try insertObjects(coordinator, (5..<55).map { rowInsert(town, ["name": .text("T\($0)")]) })
        #expect(try run() == (5, 55))  // more rows than expected
        #expect(try run() == (5, 55))
        #expect(try fetchNames() == (0..<55).map { "T\($0)" }.sorted())
        #expect(try run() == (55, 55))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for t in try context.fetch(FetchRequest<Town>()) where t.name != "T7" && t.name != "T42" { context.delete(t) }
            try context.save()
        }
        #expect(try fetchNames() == ["T42", "T7"])  // fewer rows than expected
        #expect(try run() == (2, 2))
    }

    /// Before a statement has run, a fetch of every row of a table expects the table's largest
    /// key (at least its number of rows); a fetch with a predicate, or of one entity of a table
    /// its hierarchy shares, expects nothing. The results are the same either way.
    @Test func aFirstRunOfAWholeTableExpectsItsLargestKey() throws {
        let dir = try TemporaryDirectory()
        let model = try ManagedObjectModel(types: [CountedShape.self, CountedCircle.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let shape = try #require(model.entitiesByName["CountedShape"])
        let circle = try #require(model.entitiesByName["CountedCircle"])
        let ids = try insertObjects(
            coordinator, (1...8).map { rowInsert($0 % 2 == 0 ? circle : shape, ["n": .integer(Int64($0))]) })
        let engine = try #require(coordinator.persistentStores.first?.engine as? SQLiteStore)
        func firstRun(_ fetch: StoreFetch) throws -> (expected: Int, rows: Int) {
            var expected = -1, rows = 0
            try engine.fetch(fetch, expecting: { expected = $0 }, each: { _, _, _ in rows += 1 })
            return (expected, rows)
        }
        let largestKey = Int(try #require(ids.map(\.primaryKey).max()))
        #expect(try firstRun(FetchRequest<CountedShape>().storeFetch(in: model)) == (largestKey, 8))
        #expect(try firstRun(FetchRequest<CountedShape>(predicate: #Predicate { $0.n > 2 }).storeFetch(in: model)) == (0, 6))
        #expect(try firstRun(FetchRequest<CountedCircle>().storeFetch(in: model)) == (0, 4))  // a shared table
        var limited = try FetchRequest<CountedShape>(sortBy: [SortDescriptor(\.n)]).storeFetch(in: model)
        limited.limit = 3
        #expect(try firstRun(limited) == (3, 3))  // at most the limit
        // Rows deleted: the largest key stays, the count falls (an estimate too high is harmless).
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for s in try context.fetch(FetchRequest<CountedShape>()) where s.n < 7 { context.delete(s) }
            try context.save()
        }
        let fresh = PersistentStoreCoordinator(managedObjectModel: model)
        try fresh.addPersistentStore(type: .sqlite, at: dir.file("store.sqlite"))
        let freshEngine = try #require(fresh.persistentStores.first?.engine as? SQLiteStore)
        var expected = -1, rows = 0
        try freshEngine.fetch(
            FetchRequest<CountedShape>().storeFetch(in: model), expecting: { expected = $0 }, each: { _, _, _ in rows += 1 })
        #expect((expected, rows) == (largestKey, 2))
    }

    /// A run that fails part-way is not counted.
    @Test func aFailedFetchIsNotCounted() throws {
        let dir = try TemporaryDirectory()
        // A hierarchy, so that rows carry their entity number (a row naming an entity outside
        // it fails the read).
        let model = try ManagedObjectModel(types: [CountedShape.self, CountedCircle.self])
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: model)
        let circle = try #require(model.entitiesByName["CountedCircle"])
        try insertObjects(coordinator, (1...6).map { rowInsert(circle, ["n": .integer(Int64($0))]) })
        let engine = try #require(coordinator.persistentStores.first?.engine as? SQLiteStore)
        // (With a predicate: a first run expects nothing, see `aFirstRunOfAWholeTableExpectsItsLargestKey`.)
        let fetch = try FetchRequest<CountedShape>(predicate: #Predicate { $0.n > 0 }).storeFetch(in: model)
        func run() throws -> (expected: Int, rows: Int) {
            var expected = -1, rows = 0
            try engine.fetch(fetch, expecting: { expected = $0 }, each: { _, _, _ in rows += 1 })
            return (expected, rows)
        }
        #expect(try run() == (0, 6))
        #expect(try run() == (6, 6))
        let raw = try SQLiteConnection(location: .file(dir.file("store.sqlite").path))
        try raw.execute("UPDATE \"CountedShape\" SET Z_ENT = 999 WHERE Z_PK = (SELECT max(Z_PK) FROM \"CountedShape\")")
        #expect(throws: CoherenceError.self) { try run() }
        #expect(throws: CoherenceError.self) { try run() }
        try raw.execute("UPDATE \"CountedShape\" SET Z_ENT = \(circle.entityNumber) WHERE Z_ENT = 999")
        #expect(try run() == (6, 6))
    }
}

@Suite("Primary keys")
struct PrimaryKeyTests {
    @Test func reservedKeyBlocksNeverCollideAcrossCoordinatorsOrRollbacks() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("shared.sqlite")
        let model = try makeTestModel()
        let a = PersistentStoreCoordinator(managedObjectModel: model)
        try a.addPersistentStore(type: .sqlite, at: url)
        let b = PersistentStoreCoordinator(managedObjectModel: model)  // as a second process would
        try b.addPersistentStore(type: .sqlite, at: url)
        let town = try #require(model.entity(for: Town.self))
        var keys: [Int64] = []
        for round in 0..<100 {
            let coordinator = round % 3 == 0 ? b : a
            let ids = try insertObjects(coordinator, [rowInsert(town, ["name": .text("T\(round)")])])
            keys += ids.map(\.primaryKey)
            if round == 50 {
                // A save that rolls back (a duplicate unique name) gives its reservation back.
                #expect(throws: CoherenceError.self) {
                    try insertObjects(a, [rowInsert(town, ["name": .text("T1")])])
                }
            }
        }
        #expect(Set(keys).count == keys.count)
        #expect(try a.count(for: FetchRequest<Town>()) == 100)
        #expect(try b.count(for: FetchRequest<Town>()) == 100)
    }
}
