import Coherence
import Foundation

// RCDataKit's model, version and stack types over an Xcode model with three versions
// (School.xcdatamodeld, shipped as a resource of this example):
//   School    Student {data (a JSON blob), isOldData}
//   School 2  + firstName, lastName, id, isMigrated
//   School 3  Student {firstName, lastName, id, school}, and a new entity School {name, students}
// A store made at the first version is opened unmigrated, then migrated by the enum's stages.
// Run: swift run DataStackDemo

final class Student: ManagedObject {
    @Attribute var firstName: String?
    @Attribute var lastName: String?
    @Attribute var id: Int64 = 0
    @Relationship(inverse: "students") var school: School?
}

final class School: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "school") var students: Set<Student>
}

/// The model file.
enum SchoolModel: ModelFileManager {
    static var bundle: Bundle { .module }
    static var modelName: String { "School" }
    static var classes: [ManagedObject.Type] { [Student.self, School.self] }
}

/// A student at the first version: a JSON blob.
struct Payload: Codable {
    var firstName: String
    var lastName: String
    var id: Int64
}

/// The model file's versions and the stages between them.
enum SchoolVersion: String, ModelVersion {
    typealias ModelFile = SchoolModel
    case v1 = "School"
    case v2 = "School 2"
    case v3 = "School 3"

    static func migrationStages() throws -> [any MigrationStage] {
        [
            // New optional attributes: inferred.
            try v1.migrationStage(toVersion: .v2, label: "add names"),
            // Decode each blob while the store still has it (v2's schema), then drop it (v3).
            try v2.migrationStage(
                toVersion: .v3, label: "decode blobs",
                preMigration: { context in
                    for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
                        let payload = try JSONDecoder().decode(Payload.self, from: try student.value(forKey: "data") as? Data ?? Data())
                        try student.setValue(payload.firstName, forKey: "firstName")
                        try student.setValue(payload.lastName, forKey: "lastName")
                        try student.setValue(payload.id, forKey: "id")
                        try student.setValue(true, forKey: "isMigrated")
                    }
                })
        ]
    }
}

extension TransactionAuthor {
    static let app: TransactionAuthor = "app"
    static let importer: TransactionAuthor = "importer"
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("DataStackDemo: \(message)\n".utf8))
    exit(1)
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("DataStackDemo-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: directory) }
let url = directory.appendingPathComponent("School.sqlite")

// 1. A store at the first version: opening at an older version makes (or opens) the store at
//    that version, without migrating.
do {
    let old = try BasicDataStack(storeURL: url, versionKey: SchoolVersion.self, currentVersion: .v1, mainAuthor: .app)
    let importer = try old.backgroundContext(author: .importer)
    try importer.performAndWait { () throws in
        for (id, first, last) in [(1, "Ada", "Lovelace"), (2, "Alan", "Turing"), (3, "Grace", "Hopper")] {
            let student = try importer.insertNewObject(forEntityName: "Student")
            try student.setValue(try JSONEncoder().encode(Payload(firstName: first, lastName: last, id: Int64(id))), forKey: "data")
        }
        try importer.save()
    }
}
print("The store is at \(try SchoolVersion.versionsForStore(type: .sqlite, at: url).map(\.versionName))")

// 2. The current version: the enum's stages migrate the store; with history options the stack
//    also has a history tracker for its main author.
// (In a block: the stack and its store are released before the directory is removed.)
do {
    let stack = try BasicDataStack(
        storeURL: url, versionKey: SchoolVersion.self, mainAuthor: .app, persistentHistoryOptions: PersistentHistoryTrackingOptions())
    let versions = try SchoolVersion.versionsForStore(type: .sqlite, at: url)
    print("Migrated to \(versions.map(\.versionName)); history tracker for '\(stack.historyTracker?.currentAuthor.name ?? "none")'")
    let reader = try stack.backgroundContext(author: .importer)
    let students = try reader.performAndWait { () throws in
        try reader.fetch(FetchRequest<Student>(sortBy: [SortDescriptor(\.id)])).map {
            "\($0.id) \($0.firstName ?? "?") \($0.lastName ?? "?")"
        }
    }
    for s in students { print("  \(s)") }
    guard versions == [.v3], students == ["1 Ada Lovelace", "2 Alan Turing", "3 Grace Hopper"], stack.historyTracker != nil else {
        fail("unexpected result \(versions) \(students)")
    }
}

// 3. A preview stack: the same model in memory.
let preview = try PreviewStack(SchoolModel.self)
let sample = try preview.backgroundContext(author: "sample data")
let count = try sample.performAndWait { () throws in
    let school = School(context: sample)
    school.name = "Preview School"
    try sample.save()
    return try sample.count(for: FetchRequest<School>())
}
print("Preview stack '\(preview.container.name)' holds \(count) school in memory")
