import Coherence
import Foundation

// A store that lives through three versions of its model:
//   v1  Student(data)                 — each student a JSON blob
//   v2  Student(data, name, age)      — a custom stage decodes the blob into the new attributes
//   v3  Student(fullName, age, school) — a lightweight stage drops the blob, renames `name`
//                                        (renaming identifier) and adds `school` with a default
// Run: swift run MigrationDemo

struct Payload: Codable {
    var name: String
    var age: Int
}

func model(_ version: String, _ properties: [PropertyDescription]) throws -> ManagedObjectModel {
    try ManagedObjectModel(entities: [EntityDescription(name: "Student", properties: properties)], versionIdentifier: version)
}

let v1 = try model("1", [AttributeDescription(name: "data", type: .binaryData, isOptional: true)])
let v2 = try model(
    "2",
    [
        AttributeDescription(name: "data", type: .binaryData, isOptional: true),
        AttributeDescription(name: "name", type: .string, isOptional: true),
        AttributeDescription(name: "age", type: .integer64, isOptional: true)
    ])
let v3 = try model(
    "3",
    [
        AttributeDescription(name: "fullName", type: .string, isOptional: true, renamingIdentifier: "name"),
        AttributeDescription(name: "age", type: .integer64, isOptional: true),
        AttributeDescription(name: "school", type: .string, defaultValue: "Unknown")
    ])

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("MigrationDemo-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
let url = directory.appendingPathComponent("Students.sqlite")

/// Adds the store with `model` and `options`, runs `body` in a context, then detaches the store.
func withStore<T>(_ model: ManagedObjectModel, _ options: StoreOptions = StoreOptions(), _ body: (ManagedObjectContext) throws -> T) throws
    -> T
{
    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
    defer { try? coordinator.remove(store) }
    let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    return try context.performAndWait { () throws -> T in try body(context) }
}

// Version 1: three students as blobs.
try withStore(v1) { context in
    for (name, age) in [("Ada Lovelace", 36), ("Alan Turing", 41), ("Grace Hopper", 85)] {
        let student = try context.insertNewObject(forEntityName: "Student")
        try student.setValue(try JSONEncoder().encode(Payload(name: name, age: age)), forKey: "data")
    }
    try context.save()
}
let before = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
print("The store is at version \(before["versionIdentifier"] ?? "?")")

// The stages: decode the blobs (custom), then drop them (lightweight).
var decode = CustomMigrationStage(migratingFrom: v1, to: v2, label: "decode blobs")
decode.didMigrateHandler = { context in
    for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
        let payload = try JSONDecoder().decode(Payload.self, from: try student.value(forKey: "data") as? Data ?? Data())
        try student.setValue(payload.name, forKey: "name")
        try student.setValue(payload.age, forKey: "age")
    }
}
let manager = StagedMigrationManager([decode, LightweightMigrationStage([v2, v3], label: "drop blobs")])

let progress = Progress(totalUnitCount: 1)
progress.becomeCurrent(withPendingUnitCount: 1)
let students = try withStore(v3, StoreOptions(stagedMigrationManager: manager)) { context in
    try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).map { student in
        let name = try student.value(forKey: "fullName") as? String ?? "?"
        let age = try student.value(forKey: "age") as? Int ?? 0
        let school = try student.value(forKey: "school") as? String ?? "?"
        return "\(name), \(age), \(school)"
    }.sorted()
}
progress.resignCurrent()
let after = try PersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)
print("Migrated to version \(after["versionIdentifier"] ?? "?") (progress \(Int(progress.fractionCompleted * 100))%):")
for s in students { print("  \(s)") }
guard students.count == 3, students.first == "Ada Lovelace, 36, Unknown" else {
    FileHandle.standardError.write(Data("MigrationDemo: unexpected students \(students)\n".utf8))
    exit(1)
}

// A change that cannot be inferred is a typed error, and the store is left as it was.
let v4 = try model("4", [AttributeDescription(name: "fullName", type: .integer64, isOptional: true)])
do {
    try withStore(v4) { _ in }
} catch let error as CoherenceError where error.code == .migrationNotInferable {
    print("Version 4 refused: \(error.message)")
}
