import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

// MARK: A model for delete rules

/// Staff are nullified (their foreign key is cleared), gadgets deny, offices cascade.
final class BatchDept: ManagedObject {
    @Attribute(.unique) var code: String = ""
    @Attribute(validation: .init(minimum: 0)) var budget: Int = 0
    @Relationship(inverse: "dept") var staff: Set<BatchWorker>
    @Relationship(inverse: "owner", deleteRule: .deny) var gadgets: Set<BatchGadget>
    @Relationship(inverse: "dept", deleteRule: .cascade) var offices: Set<BatchOffice>
}

final class BatchWorker: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "staff") var dept: BatchDept?
    @Relationship(inverse: "members") var crews: Set<BatchCrew>
}

final class BatchGadget: ManagedObject {
    @Attribute var tag: String = ""
    @Relationship(inverse: "gadgets") var owner: BatchDept?
}

/// Desks cascade from offices: two levels of cascade from a department.
final class BatchOffice: ManagedObject {
    @Attribute var number: Int = 0
    @Relationship(inverse: "offices") var dept: BatchDept?
    @Relationship(inverse: "office", deleteRule: .cascade) var desks: Set<BatchDesk>
}

final class BatchDesk: ManagedObject {
    @Attribute var label: String = ""
    @Relationship(inverse: "desks") var office: BatchOffice?
}

/// Members: many-to-many with workers (a join table); mascots: to-many without inverse (a join
/// table only this side knows).
final class BatchCrew: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "crews") var members: Set<BatchWorker>
    @Relationship var mascots: Set<BatchGadget>
}

func makeBatchModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(types: [
        Person.self, Town.self, Club.self, Sample.self, Circle.self, Square.self,
        BatchDept.self, BatchWorker.self, BatchGadget.self, BatchOffice.self, BatchDesk.self, BatchCrew.self
    ])
}

/// A coordinator with one store of `type` on the batch model, and a private context on it.
func makeBatchStack(_ type: StoreType, in dir: TemporaryDirectory) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
    let c = try makeCoordinator(type, in: dir, model: try makeBatchModel())
    return (c, ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "setup"))
}

/// The code and message of the `CoherenceError` `body` throws (nil: it threw none).
func batchError(_ body: () throws -> Void) -> CoherenceError? {
    do {
        try body()
        return nil
    } catch let error as CoherenceError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

/// Every stored row of a coordinator's entities as text, sorted: what "the store is as it
/// was" compares (versions included).
func storeContents(_ c: PersistentStoreCoordinator) throws -> [String] {
    var lines: [String] = []
    for entity in c.managedObjectModel.entities where entity.superentity == nil {
        for (id, row) in try c.fetchRows(StoreFetch(entity: entity)) {
            let values = row.entity.storedProperties.map { "\($0.name)=\(row.values[$0.slot])" }.joined(separator: " ")
            lines.append("\(id) v\(row.version) \(values)")
        }
        for r in entity.relationships where r.isToMany {
            let ids = try c.fetchRows(StoreFetch(entity: entity)).map(\.id)
            for (source, destinations) in try c.related(r, of: ids) where !destinations.isEmpty {
                lines.append("\(source).\(r.name) = \(destinations.map(\.description).sorted())")
            }
        }
    }
    return lines.sorted()
}

// MARK: Inserts

@Suite("Batch requests: insert")
struct BatchInsertTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func insertsDictionariesWithEveryResultType(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        var request = BatchInsertRequest<Person>(objects: [
            ["name": "Ada", "age": 36, "email": "ada@example.com"],
            ["name": "Bob", "age": 28, "createdAt": Date(timeIntervalSinceReferenceDate: 5)],
            ["name": "Cy", "score": 1.5, "email": NSNull()]
        ])
        request.resultType = .objectIDs
        let result = try context.performAndWait { try context.execute(request) }
        #expect(result.count == 3)
        let ids = try #require(result.objectIDs)
        #expect(ids.count == 3 && ids.allSatisfy { !$0.isTemporaryID && $0.entity.name == "Person" })
        #expect(result.insertedObjectIDs == Set(ids))
        #expect(result.updatedObjectIDs.isEmpty && result.deletedObjectIDs.isEmpty)
        #expect(result.changes[ManagedObjectContext.NotificationKey.insertedObjectIDs] as? Set<ObjectID> == Set(ids))
        // The rows, with defaults for what a row left out, at version 1.
        let rows = try c.rows(for: ids)
        let ada = try #require(rows[ids[0]])
        #expect(named(ada)["name"] == .text("Ada") && named(ada)["age"] == .integer(36))
        #expect(named(ada)["email"] == .text("ada@example.com") && named(ada)["score"] == .real(0))
        #expect(ada.version == 1)
        #expect(named(try #require(rows[ids[1]]))["createdAt"] == .real(5))
        #expect(named(try #require(rows[ids[2]]))["email"] == .null)
        // The other result types.
        request.objectsToInsert = [["name": "Dee"]]
        request.resultType = .count
        let counted = try c.execute(request)
        #expect(counted.count == 1 && counted.objectIDs == nil && counted.insertedObjectIDs.isEmpty)
        #expect(counted.result as? Int == 1)
        request.resultType = .statusOnly
        let status = try c.execute(request)
        #expect(status.status && status.count == nil && status.objectIDs == nil && status.changes.isEmpty)
        #expect(status.result as? Bool == true)
        #expect(try c.count(for: FetchRequest<Person>()) == 5)
        // Saved objects get keys after the batch's.
        let later = try context.performAndWait {
            let p = Person(context: context)
            p.name = "Eve"
            try context.save()
            return p.objectID.primaryKey
        }
        #expect(later > ids.map(\.primaryKey).max() ?? 0)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func insertsRowsADictionaryHandlerFills(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        var n = 0
        var request = BatchInsertRequest<Person>(dictionaryHandler: { row in
            #expect(row.isEmpty)
            guard n < 1_000 else { return true }
            row["name"] = "p\(n)"
            row["age"] = n % 90
            n += 1
            return false
        })
        request.resultType = .count
        let result = try context.performAndWait { try context.execute(request) }
        #expect(result.count == 1_000)
        #expect(try c.count(for: FetchRequest<Person>()) == 1_000)
        #expect(try c.count(for: FetchRequest<Person>(predicate: #Predicate { $0.age == 89 })) == 11)
        let names = try context.performAndWait {
            try context.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "p999" })).map(\.age)
        }
        #expect(names == [999 % 90])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func insertsObjectsAManagedObjectHandlerFills(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, _) = try makeBatchStack(type, in: dir)
        var n = 0
        var request = BatchInsertRequest<Person>(managedObjectHandler: { person in
            guard n < 3 else { return true }
            person.name = "m\(n)"
            person.score = Double(n) / 2
            n += 1
            return false
        })
        request.resultType = .objectIDs
        let ids = try #require(try c.execute(request).objectIDs)
        let rows = try c.rows(for: ids)
        #expect(ids.compactMap { rows[$0].map { named($0)["name"] } } == [.text("m0"), .text("m1"), .text("m2")])
        #expect(rows[ids[2]].map { named($0)["score"] } == .real(1))
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func badValuesAreTypedErrorsAndWriteNothing(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        _ = try c.execute(BatchInsertRequest<Person>(objects: [["name": "Kept"]]))
        let before = try storeContents(c)
        func failure(_ rows: [[String: any Sendable]], _ entity: String = "Person") -> CoherenceError? {
            batchError {
                try context.performAndWait {
                    if entity == "Person" {
                        _ = try context.execute(BatchInsertRequest<Person>(objects: rows))
                    } else {
                        _ = try context.execute(BatchInsertRequest<ManagedObject>(entityName: entity, objects: rows))
                    }
                }
            }
        }
        // Good rows first: a failure writes none of them.
        let good: [[String: any Sendable]] = [["name": "A"], ["name": "B"]]
        let unknown = try #require(failure(good + [["name": "C", "nickname": "c"]]))
        #expect(unknown.code == .unknownKey && unknown.entityName == "Person" && unknown.propertyName == "nickname")
        #expect(unknown.message.contains("row 2"))
        let relationship = try #require(failure([["name": "C", "town": "Paris"]]))
        #expect(relationship.code == .unknownKey && relationship.propertyName == "town" && relationship.message.contains("relationship"))
        let mismatch = try #require(failure(good + [["name": "C", "age": "old"]]))
        #expect(mismatch.code == .typeMismatch && mismatch.entityName == "Person" && mismatch.propertyName == "age")
        #expect(mismatch.message.contains("String"))
        let required = try #require(failure(good + [["name": NSNull()]]))
        #expect(required.code == .validation && required.propertyName == "name" && required.message.contains("required"))
        let rule = try #require(failure([["code": "D1", "budget": -5]], "BatchDept"))
        #expect(rule.code == .validation && rule.entityName == "BatchDept" && rule.propertyName == "budget")
        #expect(rule.message.contains("minimum"))
        let abstract = try #require(failure([["label": "x"]], "Shape"))
        #expect(abstract.code == .invalidRequest && abstract.entityName == "Shape")
        let unknownEntity = try #require(failure([["x": 1]], "Nowhere"))
        #expect(unknownEntity.code == .unknownEntity)
        #expect(try storeContents(c) == before)
    }
}

/// Every row of every table of a SQLite file (metadata and key counters included), as text.
func sqliteFileContents(_ url: URL) throws -> [String] {
    let c = try SQLiteConnection(location: .file(url.path), readOnly: true, switchesToWAL: false, functions: SQLFunctions.register)
    let tables = try c.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").rows { $0.string(0) }
    var lines: [String] = []
    for table in tables {
        let st = try c.prepare("SELECT * FROM \"\(table)\"")
        let rows = try st.rows { st in (0..<st.columnCount).map { st.value($0).description }.joined(separator: "|") }
        lines += rows.sorted().map { "\(table): \($0)" }
    }
    return lines
}

/// The number of join-table rows of a coordinator's one store.
func joinRowCount(_ c: PersistentStoreCoordinator) throws -> Int {
    let store = try #require(c.persistentStores.first)
    if let memory = store.engine as? InMemoryStore {
        return memory.state.withLock { $0.joins.values.reduce(0) { $0 + $1.count } }
    }
    if let server = store.engine as? PostgreSQLStore {
        let tables = Set(c.managedObjectModel.entities.flatMap(\.relationships).compactMap { server.generator.joinTable($0)?.table })
        return try server.withReader(nil) { connection in
            try tables.reduce(0) { $0 + Int(try connection.execute("SELECT count(*) FROM \($1)").firstInteger ?? 0) }
        }
    }
    let url = try #require(store.url)
    let joinTables = Set(
        c.managedObjectModel.entities.flatMap(\.relationships).compactMap { r -> String? in
            if case .joinTable(let name, _) = r.storage { return name }
            return nil
        })
    return try sqliteFileContents(url).filter { line in joinTables.contains { line.hasPrefix("\($0): ") } }.count
}

// MARK: Uniqueness

@Suite("Batch requests: uniqueness")
struct BatchUniquenessTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aCollidingRowFailsTheInsertNamingEntityAndValues(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, _) = try makeBatchStack(type, in: dir)
        var first = BatchInsertRequest<Town>(objects: [["name": "Paris", "population": 1]])
        first.resultType = .objectIDs
        let paris = try #require(try c.execute(first).objectIDs?.first)
        let before = try storeContents(c)
        let error = try #require(batchError { _ = try c.execute(BatchInsertRequest<Town>(objects: [["name": "Lyon"], ["name": "Paris"]])) })
        #expect(error.code == .conflict && error.entityName == "Town" && error.propertyName == "name")
        #expect(error.message.contains("\"Paris\"") && error.message.contains("row 1") && error.message.contains("\(paris)"))
        #expect(error.conflicts.first?.kind == .uniqueness && error.conflicts.first?.conflictingObjectIDs == [paris])
        #expect(error.conflicts.first?.constraint == ["name"])
        // Two rows of one request collide with each other too.
        let twice = try #require(batchError { _ = try c.execute(BatchInsertRequest<Town>(objects: [["name": "Nice"], ["name": "Nice"]])) })
        #expect(twice.code == .conflict && twice.message.contains("\"Nice\""))
        #expect(try storeContents(c) == before)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aCollidingRowUpdatesOrKeepsTheStoredRowWhenThePolicySays(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        var first = BatchInsertRequest<Town>(objects: [["name": "Paris", "population": 1]])
        first.resultType = .objectIDs
        let paris = try #require(try c.execute(first).objectIDs?.first)
        func population(_ id: ObjectID) throws -> (StoredValue?, Int64?) {
            let row = try c.rows(for: [id])[id]
            return (row.map { named($0)["population"] } ?? nil, row?.version)
        }
        // Object trump: the stored row takes the new values (an upsert) and its version moves on.
        var upsert = BatchInsertRequest<Town>(objects: [["name": "Paris", "population": 2], ["name": "Lyon", "population": 3]])
        upsert.mergePolicy = .mergeByPropertyObjectTrump
        upsert.resultType = .objectIDs
        let result = try c.execute(upsert)
        let ids = try #require(result.objectIDs)
        #expect(ids.count == 2 && ids[0] == paris && ids[1] != paris)
        #expect(result.updatedObjectIDs == [paris] && result.insertedObjectIDs == [ids[1]])
        #expect(try population(paris) == (.integer(2), 2))
        #expect(try c.count(for: FetchRequest<Town>()) == 2)
        // Without a policy of its own, the request takes the executing context's.
        upsert.mergePolicy = nil
        upsert.objectsToInsert = [["name": "Paris", "population": 5]]
        #expect(batchError { _ = try context.performAndWait { try context.execute(upsert) } }?.code == .conflict)
        context.mergePolicy = .overwrite
        _ = try context.performAndWait { try context.execute(upsert) }
        #expect(try population(paris) == (.integer(5), 3))
        // Store trump: the stored row stays as it is.
        upsert.mergePolicy = .mergeByPropertyStoreTrump
        upsert.objectsToInsert = [["name": "Paris", "population": 9]]
        let kept = try c.execute(upsert)
        #expect(kept.objectIDs == [paris] && kept.changes.isEmpty)
        #expect(try population(paris) == (.integer(5), 3))
        // Rows of one request that collide: the last one's values win, and the object is listed
        // once, as inserted.
        upsert.mergePolicy = .mergeByPropertyObjectTrump
        upsert.objectsToInsert = [["name": "Nice", "population": 1], ["name": "Nice", "population": 2]]
        let twice = try c.execute(upsert)
        let nice = try #require(twice.objectIDs?.first)
        #expect(twice.objectIDs == [nice, nice] && twice.insertedObjectIDs == [nice] && twice.updatedObjectIDs.isEmpty)
        #expect(try population(nice).0 == .integer(2))
        #expect(try c.count(for: FetchRequest<Town>()) == 3)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func anUpdateAUniquenessConstraintRefusesFails(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, _) = try makeBatchStack(type, in: dir)
        _ = try c.execute(BatchInsertRequest<Town>(objects: [["name": "Paris"], ["name": "Lyon"], ["name": "Nice"]]))
        let before = try storeContents(c)
        // Two rows would hold one name.
        let both = try #require(
            batchError {
                _ = try c.execute(
                    BatchUpdateRequest<Town>(predicate: #Predicate { $0.name != "Paris" }, propertiesToUpdate: ["name": "Same"]))
            })
        #expect(both.code == .conflict && both.entityName == "Town" && both.propertyName == "name" && both.message.contains("\"Same\""))
        // One row would take another's name.
        let taken = try #require(
            batchError {
                _ = try c.execute(
                    BatchUpdateRequest<Town>(predicate: #Predicate { $0.name == "Lyon" }, propertiesToUpdate: ["name": "Paris"]))
            })
        #expect(taken.code == .conflict && taken.message.contains("\"Paris\""))
        #expect(try storeContents(c) == before)
        // A name nobody holds is fine.
        var fine = BatchUpdateRequest<Town>(predicate: #Predicate { $0.name == "Lyon" }, propertiesToUpdate: ["name": "Lugdunum"])
        fine.resultType = .count
        #expect(try c.execute(fine).count == 1)
    }
}

// MARK: Updates

@Suite("Batch requests: update")
struct BatchUpdateTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func updatesWhatThePredicateMatchesAndMovesVersions(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        var insert = BatchInsertRequest<Person>(objects: [20, 30, 40, 50].map { ["name": "p\($0)", "age": $0, "email": "e\($0)"] })
        insert.resultType = .objectIDs
        let ids = try #require(try c.execute(insert).objectIDs)
        var request = BatchUpdateRequest<Person>(
            predicate: #Predicate { $0.age >= 30 }, propertiesToUpdate: ["score": 9.5, "email": NSNull()])
        request.resultType = .objectIDs
        let result = try context.performAndWait { try context.execute(request) }
        #expect(Set(try #require(result.objectIDs)) == Set(ids[1...]) && result.count == 3)
        #expect(result.updatedObjectIDs == Set(ids[1...]) && result.insertedObjectIDs.isEmpty && result.deletedObjectIDs.isEmpty)
        let rows = try c.rows(for: ids)
        for id in ids[1...] {
            let row = try #require(rows[id])
            #expect(named(row)["score"] == .real(9.5) && named(row)["email"] == .null && row.version == 2)
        }
        let untouched = try #require(rows[ids[0]])
        #expect(named(untouched)["score"] == .real(0) && named(untouched)["email"] == .text("e20") && untouched.version == 1)
        // Count and status only; no predicate updates every object.
        var counted = BatchUpdateRequest<Person>(propertiesToUpdate: ["age": 1])
        counted.resultType = .count
        #expect(try c.execute(counted).count == 4)
        #expect(try c.execute(BatchUpdateRequest<Person>(propertiesToUpdate: ["age": 2])).status)
        #expect(try c.count(for: FetchRequest<Person>(predicate: #Predicate { $0.age == 2 })) == 4)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func updatesObjectsOfSubEntities(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, _) = try makeBatchStack(type, in: dir)
        _ = try c.execute(BatchInsertRequest<Circle>(objects: [["label": "c", "radius": 1.0]]))
        _ = try c.execute(BatchInsertRequest<Square>(objects: [["label": "s", "side": 2.0]]))
        var all = BatchUpdateRequest<Shape>(propertiesToUpdate: ["label": "x"])
        all.resultType = .objectIDs
        let ids = try #require(try c.execute(all).objectIDs)
        #expect(Set(ids.map(\.entity.name)) == ["Circle", "Square"])
        var circles = BatchUpdateRequest<Circle>(propertiesToUpdate: ["radius": 3.0])
        circles.resultType = .count
        #expect(try c.execute(circles).count == 1)
        var shapesOnly = BatchUpdateRequest<Shape>(propertiesToUpdate: ["label": "y"])
        shapesOnly.includesSubentities = false
        shapesOnly.resultType = .count
        #expect(try c.execute(shapesOnly).count == 0)
        #expect(try c.count(for: FetchRequest<Shape>(predicate: #Predicate { $0.label == "x" })) == 2)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func badUpdatesAreTypedErrorsAndWriteNothing(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, _) = try makeBatchStack(type, in: dir)
        _ = try c.execute(BatchInsertRequest<Person>(objects: [["name": "Ada", "age": 36]]))
        _ = try c.execute(BatchInsertRequest<BatchDept>(objects: [["code": "D1"]]))
        let before = try storeContents(c)
        func failure(_ values: [String: any Sendable]) -> CoherenceError? {
            batchError { _ = try c.execute(BatchUpdateRequest<Person>(propertiesToUpdate: values)) }
        }
        let unknown = try #require(failure(["nickname": "A"]))
        #expect(unknown.code == .unknownKey && unknown.entityName == "Person" && unknown.propertyName == "nickname")
        #expect(failure(["town": NSNull()])?.code == .unknownKey)
        let mismatch = try #require(failure(["age": 1.5]))
        #expect(mismatch.code == .typeMismatch && mismatch.propertyName == "age" && mismatch.message.contains("Double"))
        let required = try #require(failure(["name": NSNull()]))
        #expect(required.code == .validation && required.propertyName == "name" && required.message.contains("required"))
        #expect(failure([:])?.code == .invalidRequest)
        let rule = try #require(batchError { _ = try c.execute(BatchUpdateRequest<BatchDept>(propertiesToUpdate: ["budget": -1])) })
        #expect(rule.code == .validation && rule.entityName == "BatchDept" && rule.propertyName == "budget")
        #expect(try storeContents(c) == before)
    }

    /// A predicate the compiler cannot translate fails before anything is written, naming the part.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func anUntranslatablePredicateIsATypedError(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        _ = try c.execute(BatchInsertRequest<Person>(objects: [["name": "Ada"], ["name": "Bo"]]))
        let before = try storeContents(c)
        let update = try #require(
            batchError {
                try context.performAndWait {
                    _ = try context.execute(
                        BatchUpdateRequest<Person>(predicate: #Predicate { $0.name.count > 2 }, propertiesToUpdate: ["age": 1]))
                }
            })
        #expect(update.code == .unsupportedPredicate && update.message.contains("String.count"))
        let delete = try #require(
            batchError {
                _ = try c.execute(BatchDeleteRequest(fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.name.count > 2 })))
            })
        #expect(delete.code == .unsupportedPredicate && delete.message.contains("String.count"))
        #expect(try storeContents(c) == before)
    }

    /// A batch update moves the versions of the rows it changes: a context that holds one of
    /// those objects with unsaved changes meets a version conflict at its next save.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aStaleObjectConflictsAtItsNextSave(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        let ada = try context.performAndWait {
            let ada = Person(context: context)
            ada.name = "Ada"
            ada.age = 30
            try context.save()
            ada.name = "Ada L."
            return ada
        }
        _ = try c.execute(BatchUpdateRequest<Person>(propertiesToUpdate: ["age": 99]))
        let error = try #require(batchError { try context.performAndWait { try context.save() } })
        #expect(error.code == .conflict)
        let conflict = try #require(error.conflicts.first)
        #expect(conflict.kind == .version && conflict.objectID == ada.objectID && conflict.oldVersion == 1 && conflict.newVersion == 2)
        #expect(conflict.persistedSnapshot?["age"] == .integer(99))
        // Merged by property, the save keeps the store's age and the context's name.
        context.mergePolicy = .mergeByPropertyObjectTrump
        try context.performAndWait { try context.save() }
        let row = try #require(try c.rows(for: [ada.objectID])[ada.objectID])
        #expect(named(row)["name"] == .text("Ada L.") && named(row)["age"] == .integer(99) && row.version == 3)
        // A row a batch delete removed is a conflict too (its new version is 0).
        context.mergePolicy = .error
        context.performAndWait { ada.age = 1 }
        _ = try c.execute(BatchDeleteRequest(objectIDs: [ada.objectID]))
        let gone = try #require(batchError { try context.performAndWait { try context.save() } })
        #expect(gone.code == .conflict && gone.conflicts.first?.newVersion == 0)
    }
}

// MARK: Deletes

@Suite("Batch requests: delete")
struct BatchDeleteTests {
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func deletesWhatAFetchRequestMatches(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        var insert = BatchInsertRequest<Person>(objects: [10, 20, 30, 40, 50].map { ["name": "p\($0)", "age": $0] })
        insert.resultType = .objectIDs
        let ids = try #require(try c.execute(insert).objectIDs)
        var young = BatchDeleteRequest(fetchRequest: FetchRequest<Person>(predicate: #Predicate { $0.age < 30 }))
        young.resultType = .objectIDs
        let result = try context.performAndWait { try context.execute(young) }
        #expect(Set(try #require(result.objectIDs)) == Set(ids[..<2]) && result.count == 2)
        #expect(result.deletedObjectIDs == Set(ids[..<2]) && result.updatedObjectIDs.isEmpty)
        #expect(try c.rows(for: Array(ids[..<2])).isEmpty)
        // Sort descriptors and a limit choose the rows.
        var oldest = BatchDeleteRequest(fetchRequest: FetchRequest<Person>(sortBy: [SortDescriptor(\.age, order: .reverse)], fetchLimit: 1))
        oldest.resultType = .objectIDs
        #expect(try c.execute(oldest).objectIDs == [ids[4]])
        var rest = BatchDeleteRequest(fetchRequest: FetchRequest<Person>())
        rest.resultType = .count
        #expect(try c.execute(rest).count == 2)
        #expect(try c.count(for: FetchRequest<Person>()) == 0)
        #expect(try c.execute(BatchDeleteRequest(fetchRequest: FetchRequest<Person>())).status)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func deletesObjectsByID(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, _) = try makeBatchStack(type, in: dir)
        var people = BatchInsertRequest<Person>(objects: [["name": "A"], ["name": "B"], ["name": "C"]])
        people.resultType = .objectIDs
        let ids = try #require(try c.execute(people).objectIDs)
        var towns = BatchInsertRequest<Town>(objects: [["name": "T"]])
        towns.resultType = .objectIDs
        let town = try #require(try c.execute(towns).objectIDs?.first)
        _ = try c.execute(BatchDeleteRequest(objectIDs: [ids[2]]))
        // Of several entities; a duplicate counts once; a row that is gone is ignored.
        var request = BatchDeleteRequest(objectIDs: [ids[0], town, ids[0], ids[2]])
        request.resultType = .objectIDs
        let result = try c.execute(request)
        #expect(result.objectIDs == [ids[0], town] && result.deletedObjectIDs == [ids[0], town])
        #expect(try storeContents(c).count == 1)
        // The key of a sibling entity's row in the same table finds nothing.
        var shapes = BatchInsertRequest<Square>(objects: [["side": 1.0]])
        shapes.resultType = .objectIDs
        let square = try #require(try c.execute(shapes).objectIDs?.first)
        let circleEntity = try #require(c.managedObjectModel.entitiesByName["Circle"])
        let wrong = ObjectID(entity: circleEntity, storeIdentifier: square.storeIdentifier, primaryKey: square.primaryKey)
        var sibling = BatchDeleteRequest(objectIDs: [wrong])
        sibling.resultType = .count
        #expect(try c.execute(sibling).count == 0)
        #expect(try c.rows(for: [square])[square] != nil)
        // An object that was never saved cannot be named.
        let temporary = ObjectID.temporary(for: circleEntity)
        #expect(batchError { _ = try c.execute(BatchDeleteRequest(objectIDs: [temporary])) }?.code == .invalidRequest)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func cascadeDeletesDestinationsAtEveryLevel(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        let (kept, removed) = try context.performAndWait { () -> ([ObjectID], [ObjectID]) in
            func dept(_ code: String, offices: [Int]) -> [ManagedObject] {
                let d = BatchDept(context: context)
                d.code = code
                var made: [ManagedObject] = [d]
                for n in 0..<offices.count {
                    let o = BatchOffice(context: context)
                    o.number = n
                    o.dept = d
                    made.append(o)
                    for k in 0..<offices[n] {
                        let desk = BatchDesk(context: context)
                        desk.label = "\(code)-\(n)-\(k)"
                        desk.office = o
                        made.append(desk)
                    }
                }
                return made
            }
            let d1 = dept("D1", offices: [2, 1])
            let d2 = dept("D2", offices: [1])
            try context.save()
            return (d2.map(\.objectID), d1.map(\.objectID))
        }
        #expect(removed.count == 6)
        var request = BatchDeleteRequest(fetchRequest: FetchRequest<BatchDept>(predicate: #Predicate { $0.code == "D1" }))
        request.resultType = .objectIDs
        let result = try c.execute(request)
        #expect(result.objectIDs == [removed[0]] && result.count == 1)
        #expect(result.deletedObjectIDs == Set(removed))
        #expect(try c.rows(for: removed).isEmpty)
        #expect(try c.rows(for: kept).count == kept.count)
        // The test model's towns cascade to their people, whose clubs lose them.
        let (town, person, club) = try context.performAndWait {
            let t = Town(context: context)
            t.name = "Paris"
            let p = Person(context: context)
            p.town = t
            let club = Club(context: context)
            club.members = [p]
            try context.save()
            return (t.objectID, p.objectID, club.objectID)
        }
        var towns = BatchDeleteRequest(objectIDs: [town])
        towns.resultType = .objectIDs
        let cascaded = try c.execute(towns)
        // (The club only loses a member: its row does not change, and it is not listed.)
        #expect(cascaded.deletedObjectIDs == [town, person] && cascaded.updatedObjectIDs.isEmpty)
        #expect(try c.related(club.entity.relationshipsByName["members"]!, of: [club])[club] ?? [] == [])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func nullifyClearsForeignKeysAndJoinRows(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        let (dept, w1, w2, crew, gadget) = try context.performAndWait {
            let d = BatchDept(context: context)
            d.code = "D"
            let w1 = BatchWorker(context: context)
            w1.name = "w1"
            w1.dept = d
            let w2 = BatchWorker(context: context)
            w2.name = "w2"
            w2.dept = d
            let g = BatchGadget(context: context)
            g.tag = "g"
            let crew = BatchCrew(context: context)
            crew.title = "c"
            crew.members = [w1, w2]
            crew.mascots = [g]
            try context.save()
            return (d.objectID, w1.objectID, w2.objectID, crew.objectID, g.objectID)
        }
        #expect(try joinRowCount(c) == 3)
        let members = try #require(crew.entity.relationshipsByName["members"])
        let mascots = try #require(crew.entity.relationshipsByName["mascots"])
        // The workers hold the department's key: it is cleared and their versions move on.
        var deleteDept = BatchDeleteRequest(objectIDs: [dept])
        deleteDept.resultType = .objectIDs
        let result = try c.execute(deleteDept)
        #expect(result.deletedObjectIDs == [dept] && result.updatedObjectIDs == [w1, w2])
        let workers = try c.rows(for: [w1, w2])
        for id in [w1, w2] {
            let row = try #require(workers[id])
            #expect(named(row)["dept"] == .null && row.version == 2)
        }
        // A worker leaves its crew (a join table): the join row goes; the crew's row does not
        // change, so the crew is not listed.
        var deleteWorker = BatchDeleteRequest(objectIDs: [w1])
        deleteWorker.resultType = .objectIDs
        let left = try c.execute(deleteWorker)
        #expect(left.deletedObjectIDs == [w1] && left.updatedObjectIDs.isEmpty)
        #expect(try c.related(members, of: [crew])[crew] == [w2])
        #expect(try joinRowCount(c) == 2)
        // A gadget leaves the crew's mascots (a to-many without inverse).
        var deleteGadget = BatchDeleteRequest(objectIDs: [gadget])
        deleteGadget.resultType = .objectIDs
        let gone = try c.execute(deleteGadget)
        #expect(gone.deletedObjectIDs == [gadget] && gone.updatedObjectIDs.isEmpty)
        #expect(try c.related(mascots, of: [crew])[crew] ?? [] == [])
        #expect(try joinRowCount(c) == 1)
        #expect(try c.rows(for: [crew])[crew]?.version == 1)
        // A worker that keeps its department's key: deleting it leaves the department's row as it was.
        let (d2, w3) = try context.performAndWait {
            let d = BatchDept(context: context)
            d.code = "D2"
            let w = BatchWorker(context: context)
            w.dept = d
            try context.save()
            return (d.objectID, w.objectID)
        }
        var deleteW3 = BatchDeleteRequest(fetchRequest: FetchRequest<BatchWorker>(predicate: #Predicate { $0.dept != nil }))
        deleteW3.resultType = .objectIDs
        let w3Gone = try c.execute(deleteW3)
        #expect(w3Gone.deletedObjectIDs == [w3] && w3Gone.updatedObjectIDs.isEmpty)
        #expect(try c.rows(for: [d2])[d2]?.version == 1)
        #expect(try c.related(dept.entity.relationshipsByName["staff"]!, of: [d2])[d2] ?? [] == [])
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func denyFailsTheWholeRequestAndDeletesNothing(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(type, in: dir)
        let (d2, gadget) = try context.performAndWait {
            let d1 = BatchDept(context: context)
            d1.code = "D1"
            let office = BatchOffice(context: context)
            office.dept = d1
            let desk = BatchDesk(context: context)
            desk.office = office
            let d2 = BatchDept(context: context)
            d2.code = "D2"
            let g = BatchGadget(context: context)
            g.owner = d2
            try context.save()
            return (d2.objectID, g.objectID)
        }
        let before = try storeContents(c)
        let error = try #require(batchError { _ = try c.execute(BatchDeleteRequest(fetchRequest: FetchRequest<BatchDept>())) })
        #expect(error.code == .deleteDenied && error.entityName == "BatchDept" && error.propertyName == "gadgets")
        #expect(error.objectID == d2 && error.message.contains("deny"))
        #expect(try storeContents(c) == before)
        // Without the gadget, both departments (and D1's office and desk) go.
        _ = try c.execute(BatchDeleteRequest(objectIDs: [gadget]))
        var all = BatchDeleteRequest(fetchRequest: FetchRequest<BatchDept>())
        all.resultType = .objectIDs
        #expect(try c.execute(all).deletedObjectIDs.count == 4)
        #expect(try storeContents(c).isEmpty)
    }
}

// MARK: Transactions, row cache and merging

@Suite("Batch requests: transactions and merging")
struct BatchMergeTests {
    /// A request that fails part-way — after thousands of rows, after cascading — leaves every
    /// table of the file as it was, key counters included.
    @Test func aFailedRequestLeavesTheFileAsItWas() throws {
        let dir = try TemporaryDirectory()
        let (c, context) = try makeBatchStack(.sqlite, in: dir)
        let url = dir.file("store.sqlite")
        try context.performAndWait {
            let d = BatchDept(context: context)
            d.code = "D"
            let office = BatchOffice(context: context)
            office.dept = d
            let g = BatchGadget(context: context)
            g.owner = d
            let other = BatchDept(context: context)
            other.code = "E"
            try context.save()
        }
        _ = try c.execute(BatchInsertRequest<Town>(objects: [["name": "Paris"]]))
        let before = try sqliteFileContents(url)
        var n = 0
        let insert = BatchInsertRequest<Town>(dictionaryHandler: { row in
            n += 1
            row["name"] = n <= 3_000 ? "town \(n)" : "Paris"
            return n > 3_001
        })
        #expect(batchError { _ = try c.execute(insert) }?.code == .conflict)
        #expect(n == 3_001)
        #expect(try sqliteFileContents(url) == before)
        // Department E goes first and D's office would cascade, then D's gadget denies.
        #expect(batchError { _ = try c.execute(BatchDeleteRequest(fetchRequest: FetchRequest<BatchDept>())) }?.code == .deleteDenied)
        #expect(try sqliteFileContents(url) == before)
        #expect(batchError { _ = try c.execute(BatchUpdateRequest<BatchDept>(propertiesToUpdate: ["code": "X"])) }?.code == .conflict)
        #expect(try sqliteFileContents(url) == before)
        // The store works on afterwards.
        var fine = BatchInsertRequest<Town>(objects: [["name": "Lyon"]])
        fine.resultType = .count
        #expect(try c.execute(fine).count == 1)
    }

    /// The coordinator that runs a request drops the rows it changed from its row cache, so
    /// faults read the new values.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func theRowCacheForgetsChangedRows(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, _) = try makeBatchStack(type, in: dir)
        var insert = BatchInsertRequest<Person>(objects: [["name": "A", "age": 1], ["name": "B", "age": 2]])
        insert.resultType = .objectIDs
        let ids = try #require(try c.execute(insert).objectIDs)
        _ = try c.rows(for: ids)
        #expect(c.rowCache.entry(for: ids[0]) != nil && c.rowCache.entry(for: ids[1]) != nil)
        _ = try c.execute(BatchUpdateRequest<Person>(predicate: #Predicate { $0.age == 1 }, propertiesToUpdate: ["age": 10]))
        #expect(c.rowCache.entry(for: ids[0]) == nil && c.rowCache.entry(for: ids[1]) != nil)
        #expect(try c.rows(for: [ids[0]])[ids[0]].map { named($0)["age"] } == .integer(10))
        _ = try c.execute(BatchDeleteRequest(objectIDs: [ids[1]]))
        #expect(c.rowCache.entry(for: ids[1]) == nil)
        #expect(try c.rows(for: [ids[1]]).isEmpty)
    }

    /// Contexts learn of a batch request's changes through the IDs it returns: updated objects
    /// are reloaded (keeping unsaved edits), faults read the new values, deleted objects leave.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func contextsMergeTheReturnedIDs(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let (c, writer) = try makeBatchStack(type, in: dir)
        // On SQLite and PostgreSQL the requests run through a second coordinator on the store
        // (another process, in effect), whose changes this coordinator's row cache has not seen.
        let runner: PersistentStoreCoordinator
        if type != .inMemory {
            runner = PersistentStoreCoordinator(managedObjectModel: c.managedObjectModel)
            try runner.addPersistentStore(type: type, at: dir.storeURL(type, "store"))
        } else {
            runner = c
        }
        let (ada, bob, cy) = try writer.performAndWait {
            let people = ["Ada", "Bob", "Cy"].map { name in
                let p = Person(context: writer)
                p.name = name
                p.age = 30
                return p
            }
            try writer.save()
            return (people[0].objectID, people[1].objectID, people[2].objectID)
        }
        let view = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c, name: "view")
        try view.performAndWait {
            let people = try view.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            #expect(people.map(\.age) == [30, 30, 30])
            people[0].name = "Ada L."  // an unsaved edit
            // Cy is a fault again, its row in the coordinator's cache.
            view.refresh(people[2], mergeChanges: false)
            #expect(people[2].age == 30)
            view.refresh(people[2], mergeChanges: false)
        }
        #expect(c.rowCache.entry(for: cy) != nil)
        var update = BatchUpdateRequest<Person>(propertiesToUpdate: ["age": 31])
        update.resultType = .objectIDs
        let updated = try runner.execute(update)
        var delete = BatchDeleteRequest(objectIDs: [bob])
        delete.resultType = .objectIDs
        let deleted = try runner.execute(delete)
        let stale = try view.performAndWait { try #require(view.registeredObject(for: ada) as? Person).age }
        #expect(stale == 30)
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: updated.changes, into: [view])
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: deleted.changes, into: [view])
        try view.performAndWait {
            let a = try #require(view.registeredObject(for: ada) as? Person)
            #expect(a.age == 31 && a.name == "Ada L.")
            #expect(view.registeredObject(for: bob) == nil)
            let c3 = try #require(view.registeredObject(for: cy) as? Person)
            #expect(c3.isFault)
            #expect(c3.age == 31)
            // The merged object saves without a conflict.
            try view.save()
        }
        let row = try #require(try c.rows(for: [ada])[ada])
        #expect(named(row)["name"] == .text("Ada L.") && named(row)["age"] == .integer(31))
        #expect(try c.count(for: FetchRequest<Person>()) == 2)
    }
}

@Suite("Batch requests: several stores")
struct BatchStoresTests {
    /// An update or a delete by fetch runs in every store holding the entity; an insert goes to
    /// the first (or to the request's affected store); a delete by IDs runs in each ID's store.
    @Test func requestsRunInTheStoresTheyConcern() throws {
        let dir = try TemporaryDirectory()
        let c = PersistentStoreCoordinator(managedObjectModel: try makeBatchModel())
        let first = try c.addPersistentStore(type: .sqlite, at: dir.file("first.sqlite"))
        let second = try c.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        let (a, b) = try context.performAndWait {
            let a = Person(context: context)
            a.name = "A"
            let b = Person(context: context)
            b.name = "B"
            try context.assign(b, to: second)
            try context.save()
            return (a.objectID, b.objectID)
        }
        #expect(a.storeIdentifier == first.identifier && b.storeIdentifier == second.identifier)
        var update = BatchUpdateRequest<Person>(propertiesToUpdate: ["age": 7])
        update.resultType = .objectIDs
        #expect(Set(try #require(try c.execute(update).objectIDs)) == [a, b])
        var insert = BatchInsertRequest<Person>(objects: [["name": "C"]])
        insert.resultType = .objectIDs
        #expect(try c.execute(insert).objectIDs?.first?.storeIdentifier == first.identifier)
        insert.affectedStores = [second]
        let c2 = try #require(try c.execute(insert).objectIDs?.first)
        #expect(c2.storeIdentifier == second.identifier)
        var onlySecond = BatchUpdateRequest<Person>(propertiesToUpdate: ["age": 8])
        onlySecond.affectedStores = [second]
        onlySecond.resultType = .count
        #expect(try c.execute(onlySecond).count == 2)
        var byID = BatchDeleteRequest(objectIDs: [a, c2])
        byID.resultType = .objectIDs
        #expect(try c.execute(byID).deletedObjectIDs == [a, c2])
        var rest = BatchDeleteRequest(fetchRequest: FetchRequest<Person>())
        rest.resultType = .count
        #expect(try c.execute(rest).count == 2)
        #expect(try c.count(for: FetchRequest<Person>()) == 0)
        // A store that is not attached is refused.
        let other = PersistentStoreCoordinator(managedObjectModel: c.managedObjectModel)
        let foreign = try other.addPersistentStore(type: .inMemory)
        insert.affectedStores = [foreign]
        #expect(batchError { _ = try c.execute(insert) }?.code == .storeNotAttached)
    }
}
