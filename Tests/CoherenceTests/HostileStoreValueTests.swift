import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Values and files that another program, or an unusual value, puts in a store's way.
@Suite struct HostileStoreValueTests {
    /// `Decimal.nan` is a value of a decimal attribute (the typed property stores and reads it):
    /// the dynamic setter and batch requests take it too. They refused it as a type mismatch.
    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func decimalNaNIsAcceptedByTheDynamicAndBatchPaths(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("decimal-nan-\(type)")
        let coordinator = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let sample = Sample(context: context)
            sample.s = "dynamic"
            try sample.setValue(Decimal.nan, forKey: "decimal")
            #expect(sample.decimal?.isNaN == true)
            try context.save()
            _ = try context.execute(BatchInsertRequest<Sample>(objects: [["s": "inserted", "decimal": Decimal.nan]]))
            _ = try context.execute(BatchInsertRequest<Sample>(objects: [["s": "updated", "decimal": Decimal(1)]]))
            _ = try context.execute(
                BatchUpdateRequest<Sample>(predicate: #Predicate { $0.s == "updated" }, propertiesToUpdate: ["decimal": Decimal.nan]))
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let samples = try reader.fetch(FetchRequest<Sample>())
            #expect(Set(samples.map(\.s)) == ["dynamic", "inserted", "updated"])
            for sample in samples { #expect(sample.decimal?.isNaN == true, "\(sample.s): \(String(describing: sample.decimal))") }
        }
    }

    /// The store's key counter (`Z_PRIMARYKEY.Z_MAX`) put behind the table's largest key by
    /// another program: new objects get keys past the largest one and existing rows are left
    /// alone. Every insert of the entity used to fail with a `.conflict` that named no row.
    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []))
    func aKeyCounterBehindTheTableStillGivesNewKeys(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("key-counter-\(type)")
        let url = try #require(try dir.storeURL(type))
        do {
            let coordinator = try makeCoordinator(type, in: dir)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                for n in 0..<3 { Person(context: context).name = "old \(n)" }
                try context.save()
            }
            try coordinator.remove(try #require(coordinator.persistentStores.first))
        }
        if type == .sqlite {
            try runForeignSQL("UPDATE Z_PRIMARYKEY SET Z_MAX = 1", at: url.path)
        } else {
            _ = try PostgreSQLTestServer.connection().execute(
                "UPDATE \(PostgreSQLTestServer.schema(of: url)).z_primarykey SET z_max = 1")
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: type, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for n in 0..<2 { Person(context: context).name = "new \(n)" }
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let people = try reader.fetch(FetchRequest<Person>())
            #expect(people.map(\.name).sorted() == ["new 0", "new 1", "old 0", "old 1", "old 2"])
            #expect(Set(people.map(\.objectID.primaryKey)).count == 5)
        }
    }

    /// Decimal text another program wrote that is not a whole number reads as no decimal, not
    /// as the number its start spells: `Decimal(string:)` read `"-Infinity"` (a PostgreSQL
    /// `NUMERIC`) and `"-x"` as 0, `"1,5"` as 1 and `"12abc"` as 12, so they read back as those
    /// values and `== 1` matched `"1,5"`.
    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []))
    func decimalTextThatIsNoWholeNumberIsNotReadAsItsStart(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("decimal-text-\(type)")
        let url = try #require(try dir.storeURL(type))
        let coordinator = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            for n in 0..<4 {
                let sample = Sample(context: context)
                sample.i = n
                sample.decimal = Decimal(n)
            }
            try context.save()
        }
        let foreign: [Int: String] =
            type == .sqlite ? [1: "1,5", 2: "-x", 3: "12abc"] : [1: "-Infinity", 2: "Infinity"]
        for (i, text) in foreign {
            if type == .sqlite {
                try runForeignSQL("UPDATE Sample SET decimal = '\(text)' WHERE i = \(i)", at: url.path)
            } else {
                _ = try PostgreSQLTestServer.connection().execute(
                    "UPDATE \(PostgreSQLTestServer.schema(of: url)).\"Sample\" SET decimal = '\(text)' WHERE i = \(i)")
            }
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let samples = try reader.fetch(FetchRequest<Sample>(sortBy: [SortDescriptor(\.i)]))
            #expect(samples.map(\.decimal) == [Decimal(0)] + (1..<4).map { foreign[$0] == nil ? Decimal($0) : nil })
            let error = #expect(throws: CoherenceError.self) { try samples[1].value(forKey: "decimal", as: Decimal.self) }
            #expect(error?.code == .typeMismatch)
            #expect(error?.propertyName == "decimal")
            let one = Decimal(1)
            #expect(try reader.count(for: FetchRequest<Sample>(predicate: #Predicate { $0.decimal == one })) == 0)
            let zero = Decimal(0)
            #expect(try reader.fetch(FetchRequest<Sample>(predicate: #Predicate { $0.decimal == zero })).map(\.i) == [0])
        }
    }

    /// Keys that run out (a counter, or a key another program wrote, at the largest integer)
    /// fail the save with a typed error naming the entity, and write nothing; the SQLite store
    /// stopped the process (an arithmetic overflow on the key SQLite had turned into a REAL).
    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []), [true, false])
    func keysThatRunOutAreATypedError(_ type: StoreType, keyInTable: Bool) throws {
        let dir = try TemporaryDirectory("keys-run-out-\(type)-\(keyInTable)")
        let url = try #require(try dir.storeURL(type))
        do {
            let coordinator = try makeCoordinator(type, in: dir)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
            try context.performAndWait {
                Person(context: context).name = "first"
                try context.save()
            }
            try coordinator.remove(try #require(coordinator.persistentStores.first))
        }
        let sql =
            keyInTable
            ? "INSERT INTO %@ (Z_PK, Z_ENT, Z_OPT, name, age, score) SELECT \(Int64.max), Z_ENT, 1, 'last', 0, 0 FROM %@ LIMIT 1"
            : "UPDATE %@ SET Z_MAX = \(Int64.max) WHERE Z_MAX > 0"
        let tables = keyInTable ? ["Person", "Person"] : ["Z_PRIMARYKEY"]
        if type == .sqlite {
            try runForeignSQL(String(format: sql, arguments: tables), at: url.path)
        } else {
            let schema = PostgreSQLTestServer.schema(of: url)
            let qualified = tables.map { $0 == "Person" ? "\(schema).\"Person\"" : "\(schema).z_primarykey" }
            _ = try PostgreSQLTestServer.connection().execute(String(format: sql, arguments: qualified))
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try makeTestModel())
        try coordinator.addPersistentStore(type: type, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let before = try coordinator.count(for: FetchRequest<Person>())
        try context.performAndWait {
            Person(context: context).name = "new"
            let error = #expect(throws: CoherenceError.self) { try context.save() }
            #expect(error?.code == .storeWriteFailed, "\(String(describing: error))")
            if type == .sqlite { #expect(error?.entityName == "Person") }
        }
        #expect(try coordinator.count(for: FetchRequest<Person>()) == before)
    }

    /// A row whose version (`Z_OPT`) another program set to the largest integer can still be
    /// updated, by a save and by a batch update, again and again: the version goes back to 1.
    /// A save stopped the SQLite store's process (an arithmetic overflow), a batch update left
    /// a REAL version no later save matched, and PostgreSQL refused both.
    @Test(arguments: [StoreType.sqlite] + (PostgreSQLTestServer.enabled ? [StoreType.postgreSQL] : []))
    func aRowAtTheLargestVersionCanStillBeUpdated(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("largest-version-\(type)")
        let url = try #require(try dir.storeURL(type))
        let coordinator = try makeCoordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let ids = try context.performAndWait { () throws -> [ObjectID] in
            let people = (0..<2).map { n -> Person in
                let person = Person(context: context)
                person.name = "p\(n)"
                return person
            }
            try context.save()
            return people.map(\.objectID)
        }
        if type == .sqlite {
            try runForeignSQL("UPDATE Person SET Z_OPT = \(Int64.max)", at: url.path)
        } else {
            _ = try PostgreSQLTestServer.connection().execute(
                "UPDATE \(PostgreSQLTestServer.schema(of: url)).\"Person\" SET z_opt = \(Int64.max)")
        }
        let editor = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try editor.performAndWait {
            let first = try #require(try editor.existingObject(with: ids[0]) as? Person)
            first.age = 1
            try editor.save()
            first.age = 2
            try editor.save()
            _ = try editor.execute(
                BatchUpdateRequest<Person>(predicate: #Predicate { $0.name == "p1" }, propertiesToUpdate: ["age": 3]))
            editor.reset()
            let second = try #require(try editor.existingObject(with: ids[1]) as? Person)
            second.age = 4
            try editor.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let ages = try reader.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)])).map(\.age)
            #expect(ages == [2, 4])
        }
        if type == .sqlite {
            let c = try SQLiteConnection(location: .file(url.path))
            let versions = try c.prepare("SELECT Z_OPT FROM Person ORDER BY Z_PK").rows { $0.value(0) }
            #expect(versions == [.integer(2), .integer(2)])
        }
    }

    /// SQLite keeps what another program writes into the `INTEGER` version column as it is:
    /// rows whose version was text, a real number or a blob could never be saved (each save and
    /// batch update met a `.conflict`, the version compared as written, read as an integer). They
    /// are saved now, again and again, and a change by another context still conflicts.
    @Test func rowsWithAVersionThatIsNoIntegerCanBeSaved() throws {
        let dir = try TemporaryDirectory()
        let url = try #require(try dir.storeURL(.sqlite))
        let coordinator = try makeCoordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let ids = try context.performAndWait { () throws -> [ObjectID] in
            let people = (0..<5).map { n -> Person in
                let person = Person(context: context)
                person.name = "p\(n)"
                return person
            }
            try context.save()
            return people.map(\.objectID)
        }
        try runForeignSQL(
            """
            UPDATE Person SET Z_OPT = 'x' WHERE name = 'p0'; UPDATE Person SET Z_OPT = '7 ' WHERE name = 'p1';
            UPDATE Person SET Z_OPT = 2.5 WHERE name = 'p2'; UPDATE Person SET Z_OPT = x'00' WHERE name = 'p3';
            UPDATE Person SET Z_OPT = 1e30 WHERE name = 'p4'
            """, at: url.path)
        let editor = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try editor.performAndWait {
            for (i, id) in ids.enumerated() {
                let person = try #require(try editor.existingObject(with: id) as? Person)
                person.age = 10 + i
                try editor.save()
                person.age = 20 + i
                try editor.save()
            }
            _ = try editor.execute(BatchUpdateRequest<Person>(propertiesToUpdate: ["score": 1.5]))
            editor.reset()
            let first = try #require(try editor.existingObject(with: ids[0]) as? Person)
            first.age = 30
            try editor.save()
        }
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let stale = try context.performAndWait { () throws -> Person in
            context.reset()
            let person = try #require(try context.existingObject(with: ids[1]) as? Person)
            person.age = 40
            return person
        }
        try other.performAndWait {
            let person = try #require(try other.existingObject(with: ids[1]) as? Person)
            person.age = 50
            try other.save()
        }
        context.performAndWait {
            let error = #expect(throws: CoherenceError.self) { try context.save() }
            #expect(error?.code == .conflict)
            _ = stale
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let people = try reader.fetch(FetchRequest<Person>(sortBy: [SortDescriptor(\.name)]))
            #expect(people.map(\.age) == [30, 50, 22, 23, 24])
            #expect(people.map(\.score) == [1.5, 1.5, 1.5, 1.5, 1.5])
        }
    }

    /// A store made by Core Data declares `Z_OPT` without `NOT NULL`; rows another program
    /// wrote there without a version can be updated and deleted (every save of them failed
    /// with a `.conflict`, whatever the merge policy), and a save that meets one another
    /// context changed still reports the conflict.
    @Test func coreDataRowsWithoutAVersionCanBeSaved() throws {
        let dir = try TemporaryDirectory()
        let url = try CoreDataStoreTests.fixtureCopy(in: dir)
        try runForeignSQL(
            """
            UPDATE ZSTUDENT SET Z_OPT = NULL WHERE Z_PK IN (3, 4, 5);
            INSERT INTO ZSTUDENT (Z_PK, Z_ENT, ZISOLDDATA) VALUES (11, 1, 0);
            UPDATE Z_PRIMARYKEY SET Z_MAX = 11
            """, at: url.path)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try CoreDataStoreTests.studentModel())
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let byKey = Dictionary(
                uniqueKeysWithValues: try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).map {
                    ($0.objectID.primaryKey, $0)
                })
            try #require(byKey[3]).setValue(false, forKey: "isOldData")
            try #require(byKey[11]).setValue(true, forKey: "isOldData")
            context.delete(try #require(byKey[4]))
            try context.save()
            try #require(byKey[5]).setValue(false, forKey: "isOldData")
        }
        try other.performAndWait {
            let five = try other.existingObject(with: try context.performAndWait { try #require(context.updatedObjects.first).objectID })
            try five.setValue(false, forKey: "isOldData")
            try other.save()
        }
        context.performAndWait {
            let error = #expect(throws: CoherenceError.self) { try context.save() }
            #expect(error?.code == .conflict)
        }
        let rows = try CoreDataStoreTests.query(
            url, "SELECT Z_PK, Z_OPT, ZISOLDDATA FROM ZSTUDENT WHERE Z_PK IN (3, 4, 5, 11) ORDER BY Z_PK")
        #expect(rows == [["3", "1", "0"], ["5", "1", "0"], ["11", "1", "1"]])
    }

    final class Reading: ManagedObject {
        @Transformed var samples: [Double] = []
        @Transformed var limit: Double? = nil
        @Transformed var payload: Payload = Payload(text: "")
    }

    /// A `Codable` value whose encoding fails when its text is "refuse".
    struct Payload: Codable, Equatable {
        var text: String
        struct Refused: Error {}
        func encode(to encoder: any Encoder) throws {
            if text == "refuse" { throw Refused() }
            var c = encoder.singleValueContainer()
            try c.encode(text)
        }
        init(text: String) { self.text = text }
        init(from decoder: any Decoder) throws { text = try decoder.singleValueContainer().decode(String.self) }
    }

    /// Non-finite numbers in a `@Transformed` value are kept (JSON has no form for them; they
    /// were stored as nil, so the value read back as its default and a required one failed
    /// validation at save).
    @Test func transformedNonFiniteNumbersRoundTrip() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: try ManagedObjectModel(types: [Reading.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let reading = Reading(context: context)
            reading.samples = [1.5, .nan, .infinity, -.infinity]
            reading.limit = -.infinity
            #expect(reading.samples.count == 4)
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let reading = try #require(try reader.fetch(FetchRequest<Reading>()).first)
            #expect(reading.samples.count == 4)
            #expect(reading.samples.first == 1.5)
            #expect(reading.samples.dropFirst().first?.isNaN == true)
            #expect(Array(reading.samples.dropFirst(2)) == [.infinity, -.infinity])
            #expect(reading.limit == -.infinity)
        }
    }

    /// A `@Transformed` value that cannot be encoded is not stored: the value before it is
    /// kept (it was replaced by nil, losing both).
    @Test func aTransformedValueThatCannotBeEncodedKeepsThePreviousOne() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try makeCoordinator(.sqlite, in: dir, model: try ManagedObjectModel(types: [Reading.self]))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait {
            let reading = Reading(context: context)
            reading.payload = Payload(text: "kept")
            reading.payload = Payload(text: "refuse")
            #expect(reading.payload == Payload(text: "kept"))
            try context.save()
        }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try reader.performAndWait {
            let reading = try #require(try reader.fetch(FetchRequest<Reading>()).first)
            #expect(reading.payload == Payload(text: "kept"))
        }
    }
}
