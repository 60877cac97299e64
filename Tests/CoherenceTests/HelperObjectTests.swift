import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("RCDataKit helpers: typed IDs, context helpers, Updatable")
struct HelperObjectTests {
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func typedObjectIDs(_ type: StoreType) throws {
        let stores = try HelperStores()
        let context = type == .sqlite ? stores.sqlite : stores.memory
        try context.performAndWait { () throws in
            let harry = try #require(try context.fetch(FetchRequest<Student>().where(\.id == 1)).first)
            let hogwarts = try #require(harry.school)
            let id = TypedObjectID(harry)
            #expect(id.objectID == harry.objectID)
            #expect(id == (try TypedObjectID<Student>(harry.objectID)))
            #expect(Set([id, TypedObjectID(harry)]).count == 1)
            #expect(id.uriRepresentation() == harry.objectID.uriRepresentation())

            // Another context resolves it to its own Student.
            let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
            let name = try other.performAndWait { () throws in try other.existingObject(with: id).firstName }
            #expect(name == "Harry")

            // An ID of another entity is a typed error naming it.
            let wrong = #expect(throws: CoherenceError.self) { try TypedObjectID<Student>(hogwarts.objectID) }
            #expect(wrong?.code == .typeMismatch)
            #expect(wrong?.entityName == "School")

            // Codable as its URI; decoding resolves it in the coordinator from userInfo.
            let data = try JSONEncoder().encode([id])
            #expect(String(decoding: data, as: UTF8.self).contains("x-coredata:"))
            let decoder = JSONDecoder()
            let key = try #require(CodingUserInfoKey.coherenceCoordinator)
            decoder.userInfo[key] = context.persistentStoreCoordinator
            #expect(try decoder.decode([TypedObjectID<Student>].self, from: data) == [id])
            #expect(throws: DecodingError.self) { try JSONDecoder().decode([TypedObjectID<Student>].self, from: data) }
            #expect(throws: DecodingError.self) { try decoder.decode([TypedObjectID<School>].self, from: data) }
            let uri = try TypedObjectID<Student>(uriRepresentation: id.uriRepresentation(), coordinator: context.persistentStoreCoordinator)
            #expect(uri == id)
            let bad = #expect(throws: CoherenceError.self) {
                try TypedObjectID<Student>(uriRepresentation: URL(fileURLWithPath: "/x"), coordinator: context.persistentStoreCoordinator)
            }
            #expect(bad?.code == .invalidURI)
        }
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func contextHelpersAndTheirErrors(_ type: StoreType) throws {
        let stores = try HelperStores()
        let context = type == .sqlite ? stores.sqlite : stores.memory
        try context.performAndWait { () throws in
            #expect(try context.saveIfNeeded() == false)
            let students = try context.fetch(FetchRequest<Student>().sorted([.ascending(\.id)]))
            let luna = students[7], cho = students[9]
            #expect(luna.firstName == "Luna")
            luna.lastName = "Lovegood-Scamander"
            #expect(try context.saveIfNeeded() == true)
            #expect(!context.hasChanges)

            // existing(_:withID:): typed, or typed errors.
            #expect(try context.existing(Student.self, withID: luna.objectID) === luna)
            let mismatch = #expect(throws: CoherenceError.self) { try context.existing(School.self, withID: luna.objectID) }
            #expect(mismatch?.code == .typeMismatch)
            #expect(mismatch?.entityName == "Student")
            let choID = cho.objectID
            context.delete(cho)
            try context.save()
            let missing = #expect(throws: CoherenceError.self) { try context.existing(Student.self, withID: choID) }
            #expect(missing?.code == .objectNotFound)

            // existing(_:withIDs:): found objects only, unsaved ones included.
            let fred = Student(context: context)
            fred.id = 11
            let school = try #require(students[0].school)
            let ids = [students[0].objectID, students[3].objectID, choID, school.objectID, fred.objectID]
            let found = try context.existing(Student.self, withIDs: ids)
            #expect(Set(found.map(\.id)) == [1, 4, 11])
            #expect(try context.existing(Student.self, withIDs: []).isEmpty)
            context.rollback()
        }
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func removeInstancesDeletesWithoutSaving(_ type: StoreType) throws {
        let stores = try HelperStores()
        let context = type == .sqlite ? stores.sqlite : stores.memory
        let remaining = try context.performAndWait { () throws -> Int in
            try context.removeInstances(of: Student.self, matching: .equal(\.lastName, to: "delacour", options: .caseInsensitive))
            #expect(context.deletedObjects.count == 2)
            #expect(Set(context.deletedObjects.compactMap { ($0 as? Student)?.firstName }) == ["Fleur", "Gabrielle"])
            #expect(context.hasChanges)
            return try context.count(for: FetchRequest<Student>())
        }
        #expect(remaining == SchoolData.students.count - 2)
        // Nothing was saved: another context still sees every student.
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        #expect(try other.performAndWait { () throws in try other.count(for: FetchRequest<Student>()) } == SchoolData.students.count)
        try context.performAndWait { () throws in
            try context.removeInstances(of: TestSubject.self)
            try context.save()
        }
        #expect(try other.performAndWait { () throws in try other.count(for: FetchRequest<TestSubject>()) } == 0)
        #expect(try other.performAndWait { () throws in try other.count(for: FetchRequest<Student>()) } == SchoolData.students.count - 2)
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func updatableAttributeSequences(_ type: StoreType) throws {
        let stores = try HelperStores()
        let context = type == .sqlite ? stores.sqlite : stores.memory
        try context.performAndWait { () throws in
            let s = Student(context: context)
            s.id = 0
            try context.save()

            // Unchanged: false, and the object is not marked changed. (RCDataKit's own test asserts
            // the opposite for the plain setter, which Core Data marks changed; Coherence does not.)
            s.id = 0
            #expect(!s.hasChanges)
            #expect(s.update(\.id, value: 0) == false)
            #expect(!s.hasChanges && !context.hasChanges)
            #expect(s.update(\.id, value: 3) == true)
            #expect(s.hasChanges && s.id == 3)
            #expect(s.update(\.id, value: 0) == true)
            try context.save()

            // updateIfAvailable: nil never writes.
            #expect(s.updateIfAvailable(\.firstName, value: nil) == false)
            #expect(s.updateIfAvailable(\.id, value: nil) == false)
            #expect(!s.hasChanges)
            #expect(s.updateIfAvailable(\.firstName, value: "Dean") == true)
            #expect(s.updateIfAvailable(\.firstName, value: "Dean") == false)
            #expect(s.update(\.lastName, value: nil) == false)
            try context.save()

            // minimumChange: no write within current ± m (from 0: 1 with m 2 is false, 2 with m 1 true).
            #expect(s.update(\.id, value: 1, minimumChange: 2) == false)
            #expect(s.update(\.id, value: -2, minimumChange: 2) == false)
            #expect(!s.hasChanges)
            #expect(s.update(\.id, value: 2, minimumChange: 1) == true)
            #expect(s.id == 2)
            #expect(s.updateIfAvailable(\.id, value: nil, minimumChange: 0) == false)
            #expect(s.updateIfAvailable(\.id, value: 2, minimumChange: 0) == false)
            #expect(s.updateIfAvailable(\.id, value: 5, minimumChange: 2) == true)
            // The distance between the extremes overflows: a change, not a trap.
            s.id = .min
            #expect(s.update(\.id, value: .max, minimumChange: 10) == true)
            #expect(s.update(\.id, value: .max, minimumChange: -1) == true)

            let subject = TestSubject(context: context)
            subject.height = 170
            try context.save()
            #expect(subject.update(\.height, value: 170.05, minimumChange: 0.1) == false)
            #expect(subject.updateIfAvailable(\.height, value: nil, minimumChange: 0.1) == false)
            #expect(!subject.hasChanges)
            #expect(subject.update(\.height, value: 170.25, minimumChange: 0.1) == true)
            #expect(subject.updateIfAvailable(\.height, value: 171.5, minimumChange: 0.1) == true)
            #expect(subject.height == 171.5)
            #expect(subject.update(\.weight, value: nil) == false)
            #expect(subject.updateIfAvailable(\.weight, value: 70.0) == true)
            try context.save()

            // A non-optional attribute whose stored value is nil counts as different.
            let slot = try #require(s.entity.attributesByName["id"]).slot
            s._setStoredValue(.null, at: slot)
            #expect(s.id == 0)
            #expect(s.update(\.id, value: 0) == true)
            #expect(s._storedValue(at: slot) == .integer(0))
            context.rollback()
        }
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func updatableRelationshipSequences(_ type: StoreType) throws {
        let stores = try HelperStores()
        let context = type == .sqlite ? stores.sqlite : stores.memory
        try context.performAndWait { () throws in
            let schools = try context.fetch(FetchRequest<School>().sorted([.ascending(\.id)]))
            let students = try context.fetch(FetchRequest<Student>().sorted([.ascending(\.id)]))
            let hogwarts = try #require(schools.first { $0.id == "hogwarts" })
            let harry = students[0], luna = students[7], cho = students[9]

            // To-one: unchanged is false; to nil marks both sides changed.
            #expect(harry.update(\.school, value: hogwarts) == false)
            #expect(!context.hasChanges)
            #expect(harry.update(\.school, value: nil) == true)
            #expect(harry.hasChanges && hogwarts.hasChanges)
            #expect(!hogwarts.students.contains(harry))
            context.rollback()
            // To-one add / remove: set when different, clear when it is the object.
            let durmstrang = try #require(schools.first { $0.id == "durmstrang" })
            #expect(harry.add(\.school, relation: hogwarts) == false)
            #expect(harry.add(\.school, relation: nil) == false)
            #expect(harry.remove(\.school, relation: durmstrang) == false)
            #expect(!context.hasChanges)
            #expect(harry.add(\.school, relation: durmstrang) == true)
            #expect(durmstrang.students.contains(harry) && !hogwarts.students.contains(harry))
            #expect(harry.remove(\.school, relation: durmstrang) == true)
            #expect(harry.school == nil && !durmstrang.students.contains(harry))
            context.rollback()

            // To-many add / remove.
            #expect(hogwarts.add(\.students, relation: harry) == false)
            #expect(hogwarts.add(\.students, relation: Optional<Student>.none) == false)
            #expect(hogwarts.add(\.students, relation: [harry, students[1]]) == false)
            #expect(hogwarts.remove(\.students, relation: luna) == false)
            #expect(hogwarts.remove(\.students, relation: [luna, cho]) == false)
            #expect(!context.hasChanges)
            #expect(hogwarts.add(\.students, relation: luna) == true)
            #expect(luna.school === hogwarts)
            #expect(hogwarts.add(\.students, relation: [harry, cho]) == true)
            #expect(hogwarts.students == Set([harry, students[1], students[2], students[8], luna, cho]))
            #expect(hogwarts.remove(\.students, relation: Optional(luna)) == true)
            #expect(luna.school == nil)
            #expect(hogwarts.remove(\.students, relation: [cho, luna]) == true)
            #expect(hogwarts.students.count == 4)
            try context.save()
            let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
            let ids = try other.performAndWait { () throws in
                try other.fetch(FetchRequest<Student>().where(#Predicate { $0.school?.id == "hogwarts" })).map(\.id).sorted()
            }
            #expect(ids == [1, 2, 3, 9])
        }
    }
}
