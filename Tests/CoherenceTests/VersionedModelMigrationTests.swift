import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A four-version model in Xcode's format (`Campus.xcdatamodeld`), migrated stage by stage and
/// all at once:
/// - `Campus`: Student {data (a JSON blob), isOldData};
/// - `Campus 2`: Student gains firstName, lastName, id (default 0), isMigrated (default NO);
/// - `Campus 3`: Student moves under a new abstract Person (firstName, lastName, id, isMigrated),
///   next to a new Teacher; a new School has students and a teacher; Student's `data` is gone.
///   The custom stage decodes each blob into the new attributes before the step, and puts every
///   student in a new school after it;
/// - `Campus 4`: `isMigrated` is gone; a new Course.
@Suite("Migrations: a four-version Xcode model")
struct VersionedModelMigrationTests {
    static let versions = ["Campus", "Campus 2", "Campus 3", "Campus 4"]

    static func modelURL() throws -> URL {
        try #require(Bundle.module.url(forResource: "Campus", withExtension: "xcdatamodeld"))
    }

    /// Version `n` (1 to 4).
    static func version(_ n: Int) throws -> ManagedObjectModel {
        try ManagedObjectModel(contentsOf: try modelURL(), version: versions[n - 1])
    }

    /// A student's blob at the first version.
    struct Payload: Codable {
        var firstName: String?
        var lastName: String?
        var id: Int?
    }

    /// Ten students at the first version; the last has no id in its blob.
    static func makeStore(_ url: URL, blobs: [Data]? = nil) throws {
        let encoder = JSONEncoder()
        let data =
            try blobs
            ?? (0..<10).map { i in
                try encoder.encode(Payload(firstName: "First\(i)", lastName: "Last\(i)", id: i == 9 ? nil : 100 + i))
            }
        try withMigrationStore(try version(1), at: url) { context in
            for blob in data { try insertObject(context, "Student", ["data": blob]) }
            try context.save()
        }
    }

    /// The stages: 1 → 2 lightweight, 2 → 3 custom (decode the blobs; then a school for every
    /// student), 3 → 4 lightweight.
    static func manager() throws -> StagedMigrationManager {
        var decodeStage = CustomMigrationStage(migratingFrom: try version(2), to: try version(3), label: "decode students")
        decodeStage.willMigrateHandler = { context in
            for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
                let payload = try decodePayload(try student.value(forKey: "data") as? Data ?? Data())
                try student.setValue(payload.firstName, forKey: "firstName")
                try student.setValue(payload.lastName, forKey: "lastName")
                try student.setValue(Int64(payload.id ?? -1), forKey: "id")
                try student.setValue(nil, forKey: "data")
                try student.setValue(true, forKey: "isMigrated")
            }
        }
        decodeStage.didMigrateHandler = { context in
            let school = try insertObject(context, "School", ["id": "N1", "name": "North"])
            for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
                student.relate("school", to: [school])
            }
        }
        return StagedMigrationManager([
            LightweightMigrationStage([try version(1), try version(2)], label: "names and ids"),
            decodeStage,
            LightweightMigrationStage([try version(3), try version(4)], label: "courses")
        ])
    }

    static func decodePayload(_ data: Data) throws -> Payload { try JSONDecoder().decode(Payload.self, from: data) }

    /// Adds the store with version `n` and the stages.
    static func open<T>(_ url: URL, at n: Int, _ body: (ManagedObjectContext) throws -> T) throws -> T {
        try withMigrationStore(try version(n), at: url, options: StoreOptions(stagedMigrationManager: try manager()), body)
    }

    /// The version the store's metadata records (1 to 4, nil when none matches).
    static func storeVersion(_ url: URL) throws -> Int? {
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        return try (1...4).first { try version($0).isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata) }
    }

    /// The students as `first last id school`, sorted, at version 3 or 4.
    static func students(_ context: ManagedObjectContext) throws -> [String] {
        try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).map { s in
            let first = try s.value(forKey: "firstName") as? String ?? "-"
            let last = try s.value(forKey: "lastName") as? String ?? "-"
            let id = try s.value(forKey: "id") as? Int ?? 0
            return "\(first) \(last) \(id) \(s.related("school").map(\.nameValue).joined())"
        }.sorted()
    }

    static let expectedStudents =
        (0..<9).map { "First\($0) Last\($0) \(100 + $0) North" } + ["First9 Last9 -1 North"]

    @Test func theModelHasFourVersionsAndTheLastIsCurrent() throws {
        let url = try Self.modelURL()
        #expect(ManagedObjectModel.versionNames(contentsOf: url) == Self.versions)
        let models = try (1...4).map { try Self.version($0) }
        #expect(Set(models.map(\.versionHash)).count == 4)
        #expect(models.map(\.versionIdentifier) == Self.versions)
        #expect(try ManagedObjectModel(named: "Campus", in: .module).versionHash == models[3].versionHash)
        #expect(models[2].entitiesByName["Person"]?.isAbstract == true)
        #expect(models[2].entitiesByName["Student"]?.superentity?.name == "Person")
    }

    @Test func stageByStage() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("campus.sqlite")
        try Self.makeStore(url)
        #expect(try Self.storeVersion(url) == 1)

        // 2: the new attributes are empty or take their defaults; the blobs are still there.
        try Self.open(url, at: 2) { context in
            let students = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student"))
            #expect(students.count == 10)
            for s in students {
                #expect(try s.value(forKey: "firstName") == nil)
                #expect(try s.value(forKey: "id") as? Int == 0)
                #expect(try s.value(forKey: "isMigrated") as? Bool == false)
                #expect(try s.value(forKey: "isOldData") as? Bool == true)
                #expect(try (s.value(forKey: "data") as? Data).map { try Self.decodePayload($0) } != nil)
            }
        }
        #expect(try Self.storeVersion(url) == 2)

        // 3: decoded before the step, put in a school after it; under the abstract Person.
        try Self.open(url, at: 3) { context in
            #expect(try Self.students(context) == Self.expectedStudents)
            let students = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student"))
            #expect(try students.allSatisfy { try $0.value(forKey: "isMigrated") as? Bool == true })
            #expect(throws: CoherenceError.self) { try students.first?.value(forKey: "data") }
            #expect(try context.fetch(FetchRequest<ManagedObject>(entityName: "Person")).count == 10)
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Teacher")) == 0)
            let schools = try context.fetch(FetchRequest<ManagedObject>(entityName: "School"))
            #expect(schools.map { $0.related("students").count } == [10])
            // The new entities take new rows.
            let teacher = try insertObject(context, "Teacher", ["firstName": "Tess", "id": Int64(1)])
            schools.first?.relate("teacher", to: [teacher])
            try context.save()
        }
        #expect(try Self.storeVersion(url) == 3)

        // 4: `isMigrated` is gone; Course is new.
        try Self.open(url, at: 4) { context in
            #expect(try Self.students(context) == Self.expectedStudents)
            let people = try context.fetch(FetchRequest<ManagedObject>(entityName: "Person"))
            #expect(people.count == 11)
            #expect(throws: CoherenceError.self) { try people.first?.value(forKey: "isMigrated") }
            let schools = try context.fetch(FetchRequest<ManagedObject>(entityName: "School"))
            #expect(schools.first?.related("teacher").map { (try? $0.value(forKey: "firstName")) as? String } == ["Tess"])
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Course")) == 0)
            try insertObject(context, "Course", ["title": "Algebra", "seats": Int64(30), "code": UUID()])
            try context.save()
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Course")) == 1)
        }
        #expect(try Self.storeVersion(url) == 4)
    }

    @Test func allAtOnce() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("campus.sqlite")
        try Self.makeStore(url)
        try Self.open(url, at: 4) { context throws in
            #expect(try Self.students(context) == Self.expectedStudents)
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Person")) == 10)
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Course")) == 0)
        }
        #expect(try Self.storeVersion(url) == 4)
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        #expect(metadata["versionIdentifier"] == "Campus 4")
    }

    /// Without stages, 1 → 4 is inferred: the blobs are dropped, the new attributes take their
    /// defaults (nothing decodes them).
    @Test func allAtOnceInferred() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("campus.sqlite")
        try Self.makeStore(url)
        try withMigrationStore(try Self.version(4), at: url) { context in
            let students = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student"))
            #expect(students.count == 10)
            #expect(try students.allSatisfy { try $0.value(forKey: "firstName") == nil && $0.value(forKey: "id") as? Int == 0 })
            #expect(try students.allSatisfy { try $0.value(forKey: "isOldData") as? Bool == true })
        }
        #expect(try Self.storeVersion(url) == 4)
    }

    /// A blob that does not decode: the decoding stage's handler throws. Whether the migration
    /// starts at the first version or the second, the store is left where it was.
    @Test(arguments: [1, 2])
    func aThrowingHandlerLeavesTheStoreAtItsVersion(_ start: Int) throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("campus.sqlite")
        try Self.makeStore(url, blobs: [try JSONEncoder().encode(Payload(firstName: "Ann", lastName: "Lee", id: 1)), Data("{".utf8)])
        if start == 2 { try Self.open(url, at: 2) { _ in } }
        let before = try Data(contentsOf: url)
        let error = #expect(throws: CoherenceError.self) { try Self.open(url, at: 4) { _ in } }
        #expect(error?.code == .migrationFailed)
        #expect(error?.message.contains("'decode students'") == true)
        #expect(error?.underlyingErrors.isEmpty == false)
        #expect(try Self.storeVersion(url) == start)
        #expect(try Data(contentsOf: url) == before)
        let blobs = try withMigrationStore(try Self.version(start), at: url, options: StoreOptions(migratesAutomatically: false)) {
            context in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).compactMap { try $0.value(forKey: "data") as? Data }
        }
        #expect(blobs.count == 2)
    }

    /// Progress of a table rebuild (2 → 3, without stages: Student's rows move into Person's
    /// table) counts rows: 150,000 rows report in runs of 65,536, and the caller's progress
    /// follows.
    @Test func progressCountsRowsInRuns() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("campus.sqlite")
        try withMigrationStore(try Self.version(2), at: url) { _ in }
        let rows = 150_000
        let c = try SQLiteConnection(location: .file(url.path))
        try c.writeTransaction {
            try c.execute(
                """
                WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < \(rows))
                INSERT INTO Student (Z_PK, Z_ENT, Z_OPT, "firstName", "id", "isMigrated", "isOldData") SELECT i, 1, 1, 'S' || i, i, 0, 1 FROM k
                """)
            try c.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = \(rows)")
        }
        let parent = Progress(totalUnitCount: 1)
        let reports = LockedValue<[(completed: Int64, total: Int64, fraction: Double)]>([])
        let path = url.path
        InferredMigration.progressObserver.withLock { observer in
            observer = { store, completed, total in
                if store == path { reports.withLock { $0.append((completed, total, parent.fractionCompleted)) } }
            }
        }
        defer { InferredMigration.progressObserver.withLock { $0 = nil } }
        parent.becomeCurrent(withPendingUnitCount: 1)
        let count = try withMigrationStore(try Self.version(3), at: url) { context in
            try context.count(for: FetchRequest<ManagedObject>(entityName: "Person"))
        }
        parent.resignCurrent()
        #expect(count == rows)
        let seen = reports.withLock { $0 }
        #expect(seen.map(\.completed) == [65_536, 131_072, 150_000])
        #expect(seen.allSatisfy { $0.total == Int64(rows) })
        #expect(seen.allSatisfy { abs($0.fraction - Double($0.completed) / Double(rows)) < 0.001 })
        #expect(parent.fractionCompleted == 1)
    }
}
