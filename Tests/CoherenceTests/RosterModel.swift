import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

// The `Roster.xcdatamodeld` resource (three versions) as RCDataKit's model types:
//   Roster    Student {data (JSON), isOldData = YES}
//   Roster 2  + firstName, lastName, id (0), isMigrated (NO)
//   Roster 3  Student {firstName, lastName, id, school}; School {name, students}

final class RosterStudent: ManagedObject {
    @Attribute var firstName: String?
    @Attribute var lastName: String?
    @Attribute var id: Int64 = 0
    @Relationship(inverse: "students") var school: RosterSchool?
}

final class RosterSchool: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "school") var students: Set<RosterStudent>
}

enum RosterModel: ModelFileManager {
    static var bundle: Bundle { .module }
    static var modelName: String { "Roster" }
    static var classes: [ManagedObject.Type] { [RosterStudent.self, RosterSchool.self] }
}

/// A student's blob at the first version.
struct RosterPayload: Codable {
    var firstName: String
    var lastName: String
    var id: Int64
}

enum RosterVersion: String, ModelVersion {
    typealias ModelFile = RosterModel
    case v1 = "Roster"
    case v2 = "Roster 2"
    case v3 = "Roster 3"

    /// v1 → v2 by inference; v2 → v3 decodes each blob before the step (on v2's schema) and
    /// adds a school named after the
    /// number of students after it (on v3's).
    static func migrationStages() throws -> [any MigrationStage] {
        [
            try v1.migrationStage(toVersion: .v2, label: "add names"),
            try v2.migrationStage(
                toVersion: .v3, label: "decode blobs",
                preMigration: { context in
                    for student in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
                        let payload = (try student.value(forKey: "data") as? Data).flatMap {
                            try? JSONDecoder().decode(RosterPayload.self, from: $0)
                        }
                        try student.setValue(payload?.firstName, forKey: "firstName")
                        try student.setValue(payload?.lastName, forKey: "lastName")
                        try student.setValue(payload?.id ?? -1, forKey: "id")
                        try student.setValue(nil, forKey: "data")
                        try student.setValue(true, forKey: "isMigrated")
                    }
                },
                postMigration: { context in
                    let students = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student"))
                    let school = try context.insertNewObject(forEntityName: "School")
                    try school.setValue("\(students.count) migrated", forKey: "name")
                })
        ]
    }
}

/// The students of RCDataKit's fixture store, at the first version.
let rosterStudents = [
    RosterPayload(firstName: "Harry", lastName: "Potter", id: 1),
    RosterPayload(firstName: "Hermione", lastName: "Granger", id: 2),
    RosterPayload(firstName: "Ron", lastName: "Weasley", id: 3)
]

/// Makes a store at the first version holding `rosterStudents` as blobs.
func makeRosterV1Store(at url: URL) throws {
    try withMigrationStore(try RosterVersion.v1.modelVersion, at: url) { context in
        for payload in rosterStudents {
            try insertObject(context, "Student", ["data": try JSONEncoder().encode(payload)])
        }
        try context.save()
    }
}
