import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Objects by a key (the first of equal keys wins).
func keyed<K: Hashable, O>(_ objects: [O], by key: (O) -> K) -> [K: O] {
    Dictionary(objects.map { (key($0), $0) }, uniquingKeysWith: { first, _ in first })
}

/// A teacher from a web service: no importer data (always inserted).
struct IncomingTeacher: Persistable, Identifiable {
    let id: Int
    let name: String

    func importIntoContext(_ context: ManagedObjectContext, importerData: inout Void) -> PersistenceResult {
        let teacher = SchoolTeacher(context: context)
        teacher.id = id
        teacher.lastName = name
        return .insert(teacher.objectID)
    }
}

/// An error of an incoming value.
struct ImportProblem: Error, Equatable {
    let message: String
}

/// A school, linked to its teacher by ID.
struct IncomingSchool: Persistable, Identifiable {
    let id: String
    let name: String
    let teacherID: Int?

    /// How often the first phase ran, by test.
    static let prefetches = LockedValue<[String: Int]>([:])
    /// The test whose prefetch should fail.
    static let failingPrefetch = LockedValue<String?>(nil)

    struct Data {
        var schools: [String: School]
        var teachers: [Int: SchoolTeacher]
    }

    static func generateImporterData(objects: [IncomingSchool], context: ManagedObjectContext) throws -> Data {
        let test = objects.first?.name ?? ""
        prefetches.withLock { $0[test, default: 0] += 1 }
        if failingPrefetch.withLock({ $0 }) == test { throw ImportProblem(message: "prefetch failed") }
        let schools = try context.fetch(FetchRequest<School>().where(.in(\.id, objects.map(\.id))))
        let teachers = try context.fetch(FetchRequest<SchoolTeacher>().where(.in(\.id, objects.compactMap(\.teacherID))))
        return Data(schools: keyed(schools, by: \.id), teachers: keyed(teachers, by: \.id))
    }

    func importIntoContext(_ context: ManagedObjectContext, importerData: inout Data) -> PersistenceResult {
        var teacher: SchoolTeacher?
        if let teacherID {
            guard let found = importerData.teachers[teacherID] else { return .fail(ImportProblem(message: "no teacher \(teacherID)")) }
            teacher = found
        }
        if let school = importerData.schools[id] {
            let changed = [school.update(\.name, value: name), school.update(\.teacher, value: teacher)].contains(true)
            return changed ? .update(school.objectID) : .noAction
        }
        let school = School(context: context)
        school.id = id
        school.name = name
        school.teacher = teacher
        importerData.schools[id] = school
        return .insert(school.objectID)
    }
}

/// A student, linked to a school by ID; a nil name deletes the student.
struct IncomingStudent: Persistable, Identifiable {
    let id: Int
    let firstName: String?
    let schoolID: String?

    static func generateImporterData(objects: [IncomingStudent], context: ManagedObjectContext) throws -> ([Int: Student], [String: School])
    {
        let students = try context.fetch(FetchRequest<Student>().where(.in(\.id, objects.map(\.id))))
        let schools = try context.fetch(FetchRequest<School>().where(.in(\.id, objects.compactMap(\.schoolID))))
        return (keyed(students, by: \.id), keyed(schools, by: \.id))
    }

    func importIntoContext(_ context: ManagedObjectContext, importerData: inout ([Int: Student], [String: School])) -> PersistenceResult {
        let school = schoolID.flatMap { importerData.1[$0] }
        if schoolID != nil && school == nil { return .fail(ImportProblem(message: "no school \(schoolID ?? "")")) }
        if let student = importerData.0[id] {
            guard let firstName else {
                context.delete(student)
                return .delete(student.objectID)
            }
            let changed = [student.update(\.firstName, value: firstName), student.update(\.school, value: school)].contains(true)
            return changed ? .update(student.objectID) : .noAction
        }
        let student = Student(context: context)
        student.id = id
        student.firstName = firstName
        student.school = school
        importerData.0[id] = student
        return .insert(student.objectID)
    }
}

extension PersistenceResult {
    /// The case, without its value.
    var kind: String {
        switch self {
        case .insert: return "insert"
        case .update: return "update"
        case .delete: return "delete"
        case .noAction: return "noAction"
        case .fail: return "fail"
        }
    }
}

@Suite("RCDataKit helpers: Persistable importers")
struct ImporterTests {
    func emptyContext(_ type: StoreType, _ dir: TemporaryDirectory) throws -> ManagedObjectContext {
        let coordinator = try makeCoordinator(type, in: dir, model: try makeHelpersModel())
        return ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func insertThenUpdateLinkingRelationshipsByID(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try emptyContext(type, dir)
        let test = "insertThenUpdate-\(type)"
        try context.performAndWait { () throws in
            // Teachers: the default (Void) first phase.
            let teachers: [PersistenceResult] = try context.importPersistableObjects([
                IncomingTeacher(id: 1, name: "McGonagall"), IncomingTeacher(id: 2, name: "Snape")
            ])
            #expect(teachers.map(\.kind) == ["insert", "insert"])
            try context.save()

            // Schools, linked to teachers by ID; an unknown teacher fails that item only.
            let schools = try context.importPersistableObjects([
                IncomingSchool(id: "hogwarts", name: test, teacherID: 1),
                IncomingSchool(id: "durmstrang", name: "Durmstrang", teacherID: 2),
                IncomingSchool(id: "nowhere", name: "Nowhere", teacherID: 99),
                IncomingSchool(id: "ilvermorny", name: "Ilvermorny", teacherID: nil)
            ])
            #expect(schools.mapValues(\.kind) == ["hogwarts": "insert", "durmstrang": "insert", "nowhere": "fail", "ilvermorny": "insert"])
            if case .fail(let error)? = schools["nowhere"] { #expect(error as? ImportProblem == ImportProblem(message: "no teacher 99")) }
            #expect(IncomingSchool.prefetches.withLock { $0[test] } == 1)
            // Nothing is saved by an import.
            #expect(context.hasChanges)
            let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
            #expect(try other.performAndWait { () throws in try other.count(for: FetchRequest<School>()) } == 0)
            try context.save()

            // Students, linked to schools by ID (a later item sees what an earlier one inserted).
            let students = try context.importPersistableObjects([
                IncomingStudent(id: 1, firstName: "Harry", schoolID: "hogwarts"),
                IncomingStudent(id: 6, firstName: "Viktor", schoolID: "durmstrang"),
                IncomingStudent(id: 8, firstName: "Luna", schoolID: nil), IncomingStudent(id: 8, firstName: "Luna", schoolID: "hogwarts")
            ])
            #expect(students.mapValues(\.kind) == [1: "insert", 6: "insert", 8: "update"])
            try context.save()

            // Update: changed, unchanged, moved and deleted items.
            let again = try context.importPersistableObjects([
                IncomingStudent(id: 1, firstName: "Harry", schoolID: "hogwarts"),
                IncomingStudent(id: 6, firstName: "Viktor", schoolID: "hogwarts"),
                IncomingStudent(id: 8, firstName: nil, schoolID: nil), IncomingStudent(id: 9, firstName: "Neville", schoolID: "hogwarts"),
                IncomingStudent(id: 10, firstName: "Cho", schoolID: "beauxbatons")
            ])
            #expect(again.mapValues(\.kind) == [1: "noAction", 6: "update", 8: "delete", 9: "insert", 10: "fail"])
            let renamed = try context.importPersistableObjects([
                IncomingSchool(id: "hogwarts", name: test, teacherID: 2), IncomingSchool(id: "durmstrang", name: "Durmstrang", teacherID: 2)
            ])
            #expect(renamed.mapValues(\.kind) == ["hogwarts": "update", "durmstrang": "noAction"])
            #expect(IncomingSchool.prefetches.withLock { $0[test] } == 2)
            try context.save()
        }
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        try other.performAndWait { () throws in
            let students = try other.fetch(FetchRequest<Student>().sorted([.ascending(\.id)]))
            #expect(students.map(\.id) == [1, 6, 9])
            #expect(students.map { $0.school?.id } == ["hogwarts", "hogwarts", "hogwarts"])
            let hogwarts = try #require(try other.fetch(FetchRequest<School>().where(\.id == "hogwarts")).first)
            #expect(hogwarts.teacher?.lastName == "Snape")
            #expect(hogwarts.students.count == 3)
            #expect(try other.count(for: FetchRequest<School>()) == 3)
        }
    }

    @Test(arguments: PostgreSQLTestServer.storeTypes)
    func aFailingPrefetchThrowsAndChangesNothing(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let context = try emptyContext(type, dir)
        let test = "failingPrefetch-\(type)"
        IncomingSchool.failingPrefetch.withLock { $0 = test }
        defer { IncomingSchool.failingPrefetch.withLock { $0 = nil } }
        try context.performAndWait { () throws in
            let error = #expect(throws: ImportProblem.self) {
                _ = try context.importPersistableObjects([IncomingSchool(id: "a", name: test, teacherID: nil)]) as [PersistenceResult]
            }
            #expect(error?.message == "prefetch failed")
            #expect(!context.hasChanges)
            #expect(context.insertedObjects.isEmpty)
            #expect(IncomingSchool.prefetches.withLock { $0[test] } == 1)
        }
    }
}
