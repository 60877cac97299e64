import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// The data sets of the RCDataKit helpers' tests: RCDataKit's school model (teachers, schools,
// students) and a 50-row set of test subjects with umlauts, heights, scores, dates of birth and
// Booleans, both generated here.

final class SchoolTeacher: ManagedObject, Updatable {
    @Attribute var id: Int = 0
    @Attribute var firstName: String?
    @Attribute var lastName: String?
    @Relationship(inverse: "teacher") var schools: Set<School>
}

final class School: ManagedObject, Updatable {
    @Attribute(.unique) var id: String = ""
    @Attribute var name: String?
    @Relationship(inverse: "school") var students: Set<Student>
    @Relationship(inverse: "schools") var teacher: SchoolTeacher?
}

final class Student: ManagedObject, Updatable {
    @Attribute var id: Int = 0
    @Attribute var firstName: String?
    @Attribute var lastName: String?
    @Attribute var isMigrated: Bool = false
    @Relationship(inverse: "students") var school: School?
}

final class TestSubject: ManagedObject, Updatable {
    @Attribute var id: UUID?
    @Attribute var name: String = ""
    @Attribute var nickname: String?
    @Attribute var height: Double = 0
    @Attribute var weight: Double?
    @Attribute var score: Int64 = 0
    @Attribute var dateOfBirth: Date?
    @Attribute var isMale: Bool = false
}

extension TestSubject {
    /// A computed property: not in the store, so predicates cannot use it.
    var displayName: String { name + "!" }
}

func makeHelpersModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(types: [SchoolTeacher.self, School.self, Student.self, TestSubject.self])
}

/// One test subject as plain values, for the expected answers.
struct SubjectSpec: Sendable {
    let name: String
    let nickname: String?
    let height: Double
    let weight: Double?
    let score: Int64
    let dateOfBirth: Date?
    let isMale: Bool
}

/// One student of the school data set.
struct StudentSpec: Sendable {
    let id: Int
    let firstName: String
    let lastName: String?
    /// Index into `SchoolData.schools`.
    let school: Int?
}

enum SchoolData {
    static let teachers: [(id: Int, first: String, last: String)] = [
        (1, "Minerva", "McGonagall"), (2, "Severus", "Snape"), (3, "Filius", "Flitwick")
    ]
    /// (id, name, teacher index)
    static let schools: [(id: String, name: String, teacher: Int?)] = [
        ("hogwarts", "Hogwarts", 0), ("beauxbatons", "Beauxbâtons", 1), ("durmstrang", "Durmstrang", 1), ("ilvermorny", "Ilvermorny", nil)
    ]
    static let students: [StudentSpec] = [
        StudentSpec(id: 1, firstName: "Harry", lastName: "Potter", school: 0),
        StudentSpec(id: 2, firstName: "Hermione", lastName: "Granger", school: 0),
        StudentSpec(id: 3, firstName: "Ron", lastName: "Weasley", school: 0),
        StudentSpec(id: 4, firstName: "Fleur", lastName: "Delacour", school: 1),
        StudentSpec(id: 5, firstName: "Gabrielle", lastName: "Delacour", school: 1),
        StudentSpec(id: 6, firstName: "Viktor", lastName: "Krum", school: 2),
        StudentSpec(id: 7, firstName: "Igor", lastName: nil, school: 2),
        StudentSpec(id: 8, firstName: "Luna", lastName: "Lovegood", school: nil),
        StudentSpec(id: 9, firstName: "Neville", lastName: "Longbottom", school: 0),
        StudentSpec(id: 10, firstName: "Cho", lastName: "Chang", school: nil)
    ]

    static let names = [
        "Jürgen", "Jurgen", "JÜRGEN", "Müller", "Mueller", "mÜller", "Zoë", "Zoe", "Émile", "émile",
        "Ångström", "Björn", "Bjorn", "Søren", "Ünal", "Özil", "Öztürk", "Ärger", "Aerger", "Ärzte",
        "Anaïs", "Anais", "Chloé", "CHLOE", "François", "Francois", "Gößl", "Hélène", "Helene", "Ines",
        "Jörg", "Joerg", "Käthe", "Kathe", "Léa", "Lea", "Mädchen", "Noël", "Noel", "Ömer",
        "Pía", "Rémy", "Sönke", "Tümay", "Uwe", "Vérène", "Wölfi", "Xaver", "Yusuf", "Zoltán"
    ]

    /// The 50 test subjects, generated from `names`.
    static let subjects: [SubjectSpec] = names.enumerated().map { i, name in
        SubjectSpec(
            name: name,
            nickname: i % 4 == 3 ? nil : (i % 2 == 0 ? name.lowercased() : "nick \(name)"),
            height: 150 + Double((i * 7) % 50) + (i % 2 == 0 ? 0.5 : 0),
            weight: i % 5 == 4 ? nil : 45 + Double((i * 13) % 60),
            score: Int64((i * 37) % 101) - 10,
            dateOfBirth: i % 7 == 6 ? nil : Date(timeIntervalSinceReferenceDate: -900_000_000 + Double(i) * 9_000_000),
            isMale: i % 3 == 0)
    }

    /// Inserts both data sets through a context of `coordinator` and saves.
    static func populate(_ coordinator: PersistentStoreCoordinator) throws {
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try context.performAndWait { () throws in
            let teacherObjects = teachers.map { t in
                let o = SchoolTeacher(context: context)
                o.id = t.id
                o.firstName = t.first
                o.lastName = t.last
                return o
            }
            let schoolObjects = schools.map { s in
                let o = School(context: context)
                o.id = s.id
                o.name = s.name
                o.teacher = s.teacher.map { teacherObjects[$0] }
                return o
            }
            for s in students {
                let o = Student(context: context)
                o.id = s.id
                o.firstName = s.firstName
                o.lastName = s.lastName
                o.school = s.school.map { schoolObjects[$0] }
            }
            for (i, s) in subjects.enumerated() {
                let o = TestSubject(context: context)
                o.id = UUID(uuid: (UInt8(i), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))
                o.name = s.name
                o.nickname = s.nickname
                o.height = s.height
                o.weight = s.weight
                o.score = s.score
                o.dateOfBirth = s.dateOfBirth
                o.isMale = s.isMale
            }
            try context.save()
        }
    }
}

/// The data sets in a SQLite store and in an in-memory store, each with a context.
struct HelperStores {
    let directory: TemporaryDirectory
    let sqlite: ManagedObjectContext
    let memory: ManagedObjectContext

    init(_ name: String = #function) throws {
        directory = try TemporaryDirectory(name)
        let model = try makeHelpersModel()
        let s = try makeCoordinator(.sqlite, in: directory, model: model)
        let m = try makeCoordinator(.inMemory, in: directory, model: model)
        try SchoolData.populate(s)
        try SchoolData.populate(m)
        sqlite = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: s)
        memory = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: m)
    }

    /// Both contexts, each labelled with its store type.
    var both: [(String, ManagedObjectContext)] { [("SQLite", sqlite), ("in-memory", memory)] }
}
