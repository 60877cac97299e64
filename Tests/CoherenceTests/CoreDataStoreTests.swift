import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// A student as the fixture's `data` blob holds it (JSON).
struct FixtureStudent: Codable, Equatable {
    var id: Int
    var firstName: String
    var lastName: String
    var school: String
}

/// Stores made by Apple's Core Data: the fixture `OldStudentsStore.sqlite` (10 students, made
/// on an Apple platform) and Core Data-layout stores built with SQL.
@Suite("Stores made by Core Data")
struct CoreDataStoreTests {
    /// The fixture's model: Student with `data` (binary) and `isOldData` (Bool, default YES).
    static func studentModel(extra: [PropertyDescription] = [], versionIdentifier: String? = nil) throws -> ManagedObjectModel {
        try ManagedObjectModel(
            entities: [
                EntityDescription(
                    name: "Student",
                    properties: [
                        AttributeDescription(name: "data", type: .binaryData, isOptional: true),
                        AttributeDescription(name: "isOldData", type: .boolean, defaultValue: true)
                    ] + extra)
            ], versionIdentifier: versionIdentifier)
    }

    /// A copy of the fixture in `dir` (the original is never written).
    static func fixtureCopy(in dir: TemporaryDirectory) throws -> URL {
        let source = try #require(
            Bundle.module.url(forResource: "OldStudentsStore", withExtension: "sqlite", subdirectory: "CoreDataMade"))
        let url = dir.file("OldStudentsStore.sqlite")
        try FileManager.default.copyItem(at: source, to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        return url
    }

    /// The students of a context, decoded from their blobs, by id.
    static func students(_ context: ManagedObjectContext) throws -> [Int: FixtureStudent] {
        var result: [Int: FixtureStudent] = [:]
        for object in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
            let data = try #require(try object.value(forKey: "data") as? Data)
            let student = try JSONDecoder().decode(FixtureStudent.self, from: data)
            result[student.id] = student
        }
        return result
    }

    /// Rows of a SQL query on the file, each as text.
    static func query(_ url: URL, _ sql: String) throws -> [[String]] {
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true, switchesToWAL: false)
        let st = try c.prepare(sql)
        return try st.rows { row in
            (0..<row.columnCount).map { i in
                switch row.value(i) {
                case .text(let text): return text
                case .null: return "NULL"
                default: return "\(row.value(i))"
                }
            }
        }
    }

    /// The file's property list in Z_METADATA.
    static func propertyList(_ url: URL) throws -> [String: Any] {
        let c = try SQLiteConnection(location: .file(url.path), readOnly: true, switchesToWAL: false)
        let data = try #require(try c.prepare("SELECT Z_PLIST FROM Z_METADATA").rows { $0.data(0) }.first)
        return try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    }

    @Test func readsTheTenStudentsOfTheFixture() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        try withMigrationStore(try Self.studentModel(), at: url) { context in
            let students = try Self.students(context)
            #expect(students.count == 10)
            #expect(students[4] == FixtureStudent(id: 4, firstName: "Stan", lastName: "Marsh", school: "SOU"))
            #expect(students[7]?.lastName == "Belcher")
            let objects = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student"))
            #expect(objects.allSatisfy { (try? $0.value(forKey: "isOldData")) as? Bool == true })
        }
        // Core Data's metadata is kept; the model's version is added under Coherence's keys.
        let plist = try Self.propertyList(url)
        #expect(plist["NSStoreModelVersionHashes"] is [String: Any])
        #expect(plist["NSStoreType"] as? String == "SQLite")
        #expect(plist["Coherence.modelVersionHash"] as? String == (try Self.studentModel()).versionHash)
        let metadata = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
        #expect(metadata["storeUUID"] == "CED3CCE8-25FC-48DF-B364-D3F08376B30E")
        #expect(metadata["storeLayout"] == "CoreData")
    }

    @Test func writesTheFixtureInCoreDataLayout() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        let model = try Self.studentModel()
        let kyle = FixtureStudent(id: 11, firstName: "Kyle", lastName: "Broflovski", school: "SOU")
        try withMigrationStore(model, at: url) { context in
            let objects = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student"))
            let byID = Dictionary(
                uniqueKeysWithValues: try objects.map { o in
                    (try JSONDecoder().decode(FixtureStudent.self, from: try #require(try o.value(forKey: "data") as? Data)).id, o)
                })
            try byID[4]?.setValue(false, forKey: "isOldData")
            context.delete(try #require(byID[7]))
            try insertObject(context, "Student", ["data": try JSONEncoder().encode(kyle), "isOldData": false])
            try context.save()
        }
        try withMigrationStore(model, at: url) { context in
            let students = try Self.students(context)
            #expect(students.count == 10 && students[7] == nil && students[11] == kyle)
            let fresh = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).filter {
                (try? $0.value(forKey: "isOldData")) as? Bool == false
            }
            #expect(fresh.count == 2)
        }
        // Core Data's bookkeeping: the key counter, row versions and entity numbers.
        #expect(try Self.query(url, "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Student'") == [["11"]])
        #expect(try Self.query(url, "SELECT Z_ENT, Z_OPT, ZISOLDDATA FROM ZSTUDENT WHERE Z_PK = 11") == [["1", "1", "0"]])
        #expect(try Self.query(url, "SELECT Z_OPT FROM ZSTUDENT WHERE Z_PK = 1") == [["2"]])
        #expect(try Self.query(url, "SELECT count(*) FROM ZSTUDENT") == [["10"]])
        let tables = try Self.query(url, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").map(\.[0])
        #expect(tables == ["ZSTUDENT", "Z_METADATA", "Z_MODELCACHE", "Z_PRIMARYKEY"])
    }

    // MARK: Errors

    /// Opens `url` with `model` and returns the error, checking that the file did not change.
    static func refusal(_ model: ManagedObjectModel, at url: URL) throws -> CoherenceError? {
        let before = try Data(contentsOf: url)
        var caught: CoherenceError?
        do {
            try withMigrationStore(model, at: url) { _ in }
        } catch let error as CoherenceError {
            caught = error
        }
        #expect(try Data(contentsOf: url) == before)
        return caught
    }

    @Test func missingColumnIsATypedErrorNamingIt() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        let model = try Self.studentModel(extra: [AttributeDescription(name: "name", type: .string, isOptional: true)])
        let error = try #require(try Self.refusal(model, at: url))
        #expect(error.code == .storeLayoutMismatch)
        #expect(error.message.contains("ZNAME") && error.message.contains("ZSTUDENT"))
        #expect(error.entityName == "Student" && error.propertyName == "name")
    }

    @Test func columnOfAnotherTypeIsATypedError() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        let model = try ManagedObjectModel(entities: [
            EntityDescription(
                name: "Student",
                properties: [
                    AttributeDescription(name: "data", type: .string, isOptional: true),
                    AttributeDescription(name: "isOldData", type: .boolean, defaultValue: true)
                ])
        ])
        let error = try #require(try Self.refusal(model, at: url))
        #expect(error.code == .storeLayoutMismatch)
        #expect(error.message.contains("ZSTUDENT.ZDATA") && error.message.contains("BLOB"))
        #expect(error.propertyName == "data")
    }

    @Test func missingTableIsATypedErrorNamingIt() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        let c = try SQLiteConnection(location: .file(url.path), switchesToWAL: false)
        try c.execute("ALTER TABLE ZSTUDENT RENAME TO ZPUPIL")
        try c.execute("PRAGMA journal_mode=DELETE")
        let error = try #require(try Self.refusal(try Self.studentModel(), at: url))
        #expect(error.code == .storeLayoutMismatch)
        #expect(error.message.contains("no table ZSTUDENT"))
        #expect(error.entityName == "Student")
    }

    @Test func entityMissingFromThePrimaryKeyTableIsATypedError() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Student", properties: [AttributeDescription(name: "data", type: .binaryData, isOptional: true)]),
            EntityDescription(name: "Teacher", properties: [AttributeDescription(name: "name", type: .string, isOptional: true)])
        ])
        let error = try #require(try Self.refusal(model, at: url))
        #expect(error.code == .storeLayoutMismatch)
        #expect(error.message.contains("Z_PRIMARYKEY") && error.entityName == "Teacher")
    }
}
