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

    /// Runs `sql` on the file at `url` (a store spoiled for a test).
    static func alter(_ url: URL, _ sql: String) throws {
        let c = try SQLiteConnection(location: .file(url.path), switchesToWAL: false)
        try c.execute(sql)
        try c.execute("PRAGMA journal_mode=DELETE")
    }

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
        try Self.alter(url, "ALTER TABLE ZSTUDENT RENAME TO ZPUPIL")
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

    // MARK: Core Data-layout stores built with SQL

    /// Makes a store in Core Data's layout at `url`: its metadata tables (a binary property list
    /// as Core Data writes), `Z_PRIMARYKEY` rows (number, name, parent, max) and `statements`.
    static func makeCoreDataStore(at url: URL, entities: [(Int, String, Int, Int)], _ statements: [String]) throws {
        let c = try SQLiteConnection(location: .file(url.path), switchesToWAL: false)
        try c.execute("CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)")
        try c.execute("CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)")
        try c.execute("CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)")
        for (number, name, parent, max) in entities {
            try c.execute("INSERT INTO Z_PRIMARYKEY VALUES (\(number), '\(name)', \(parent), \(max))")
        }
        let hashes = Dictionary(uniqueKeysWithValues: entities.map { ($0.1, Data(repeating: UInt8($0.0), count: 32)) })
        let plist: [String: Any] = [
            "NSStoreType": "SQLite", "NSStoreModelVersionHashes": hashes, "NSStoreModelVersionHashesVersion": 3,
            "NSStoreModelVersionIdentifiers": [""]
        ]
        let insert = try c.prepare("INSERT INTO Z_METADATA VALUES (1, ?, ?)")
        insert.bind(UUID().uuidString, at: 1)
        insert.bind(try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0), at: 2)
        try insert.execute()
        for sql in statements { try c.execute(sql) }
    }

    /// Authors, books and tags: to-one, to-many and many-to-many, numbered as Core Data might
    /// (Book 1, Tag 2, Author 3: not the model's order).
    /// (`bookExtras` and `entities` are added in a later version.)
    static func libraryModel(bookExtras: [PropertyDescription] = [], entities: [EntityDescription] = []) throws -> ManagedObjectModel {
        try ManagedObjectModel(
            entities: [
                EntityDescription(
                    name: "Author",
                    properties: [
                        AttributeDescription(name: "name", type: .string),
                        RelationshipDescription(name: "books", destination: "Book", inverse: "author", isToMany: true)
                    ]),
                EntityDescription(
                    name: "Book",
                    properties: [
                        AttributeDescription(name: "title", type: .string),
                        AttributeDescription(name: "published", type: .date, isOptional: true),
                        AttributeDescription(name: "price", type: .decimal, isOptional: true),
                        AttributeDescription(name: "code", type: .uuid, isOptional: true),
                        RelationshipDescription(name: "author", destination: "Author", inverse: "books"),
                        RelationshipDescription(name: "tags", destination: "Tag", inverse: "books", isToMany: true)
                    ] + bookExtras),
                EntityDescription(
                    name: "Tag",
                    properties: [
                        AttributeDescription(name: "name", type: .string),
                        RelationshipDescription(name: "books", destination: "Book", inverse: "tags", isToMany: true)
                    ])
            ] + entities)
    }

    static let earthseaCode = UUID(uuidString: "0F8FAD5B-D9CB-469F-A165-70867728950E")!

    static func makeLibrary(at url: URL) throws {
        let code = withUnsafeBytes(of: earthseaCode.uuid) { $0.map { String(format: "%02X", $0) }.joined() }
        try makeCoreDataStore(
            at: url, entities: [(1, "Book", 0, 2), (2, "Tag", 0, 2), (3, "Author", 0, 1)],
            [
                "CREATE TABLE ZAUTHOR (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR)",
                """
                CREATE TABLE ZBOOK (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHOR INTEGER, ZPUBLISHED TIMESTAMP, \
                ZPRICE DECIMAL, ZCODE BLOB, ZTITLE VARCHAR)
                """,
                "CREATE INDEX ZBOOK_ZAUTHOR_INDEX ON ZBOOK (ZAUTHOR)",
                "CREATE TABLE ZTAG (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR)",
                "CREATE TABLE Z_1TAGS (Z_1BOOKS INTEGER, Z_2TAGS INTEGER, PRIMARY KEY (Z_1BOOKS, Z_2TAGS))",
                "CREATE INDEX Z_1TAGS_Z_2TAGS_INDEX ON Z_1TAGS (Z_2TAGS, Z_1BOOKS)",
                "INSERT INTO ZAUTHOR VALUES (1, 3, 1, 'Ursula')",
                "INSERT INTO ZBOOK VALUES (1, 1, 1, 1, 100000.0, 12.5, X'\(code)', 'Earthsea')",
                "INSERT INTO ZBOOK VALUES (2, 1, 3, 1, NULL, 9, NULL, 'Lathe')",
                "INSERT INTO ZTAG VALUES (1, 2, 1, 'fantasy'), (2, 2, 1, 'classic')",
                "INSERT INTO Z_1TAGS VALUES (1, 1), (1, 2), (2, 2)"
            ])
    }

    static func names(_ objects: [ManagedObject], _ key: String = "name") -> Set<String> {
        Set(objects.compactMap { (try? $0.value(forKey: key)) as? String })
    }

    @Test func readsRelationshipsAndValuesOfACoreDataLayout() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("library.sqlite")
        try Self.makeLibrary(at: url)
        try withMigrationStore(try Self.libraryModel(), at: url) { context in
            let authors = try context.fetch(FetchRequest<ManagedObject>(entityName: "Author"))
            #expect(authors.count == 1)
            let books = try #require(authors.first).related("books")
            #expect(Self.names(books, "title") == ["Earthsea", "Lathe"])
            let earthsea = try #require(books.first { (try? $0.value(forKey: "title")) as? String == "Earthsea" })
            #expect(Self.names(earthsea.related("tags")) == ["fantasy", "classic"])
            #expect(try earthsea.value(forKey: "published") as? Date == Date(timeIntervalSinceReferenceDate: 100000))
            #expect(try earthsea.value(forKey: "price") as? Decimal == Decimal(string: "12.5"))
            #expect(try earthsea.value(forKey: "code") as? UUID == Self.earthseaCode)
            let tags = try context.fetch(FetchRequest<ManagedObject>(entityName: "Tag"))
            let classic = try #require(tags.first { $0.nameValue == "classic" })
            #expect(Self.names(classic.related("books"), "title") == ["Earthsea", "Lathe"])
            #expect(earthsea.related("author").first?.nameValue == "Ursula")
        }
    }

    @Test func writesRelationshipsInCoreDataLayout() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("library.sqlite")
        try Self.makeLibrary(at: url)
        let model = try Self.libraryModel()
        try withMigrationStore(model, at: url) { context in
            let books = try context.fetch(FetchRequest<ManagedObject>(entityName: "Book"))
            let lathe = try #require(books.first { (try? $0.value(forKey: "title")) as? String == "Lathe" })
            let ursula = try #require(lathe.related("author").first)
            let sf = try insertObject(context, "Tag", ["name": "sf"])
            lathe.relate("tags", to: lathe.related("tags") + [sf])
            let dispossessed = try insertObject(
                context, "Book",
                ["title": "Dispossessed", "price": Decimal(string: "10.25"), "published": Date(timeIntervalSinceReferenceDate: 5)])
            dispossessed.relate("author", to: [ursula])
            dispossessed.relate("tags", to: [sf])
            try context.save()
        }
        try withMigrationStore(model, at: url) { context in
            let tags = try context.fetch(FetchRequest<ManagedObject>(entityName: "Tag"))
            let sf = try #require(tags.first { $0.nameValue == "sf" })
            #expect(Self.names(sf.related("books"), "title") == ["Lathe", "Dispossessed"])
            let author = try #require(try context.fetch(FetchRequest<ManagedObject>(entityName: "Author")).first)
            #expect(Self.names(author.related("books"), "title") == ["Earthsea", "Lathe", "Dispossessed"])
            let dispossessed = try #require(author.related("books").first { (try? $0.value(forKey: "title")) as? String == "Dispossessed" })
            #expect(try dispossessed.value(forKey: "price") as? Decimal == Decimal(string: "10.25"))
        }
        // As Core Data keeps them: keys in Z_1TAGS, counters, the book's entity number and author.
        #expect(
            try Self.query(url, "SELECT Z_1BOOKS, Z_2TAGS FROM Z_1TAGS WHERE Z_2TAGS = 3 ORDER BY Z_1BOOKS") == [["2", "3"], ["3", "3"]])
        #expect(
            try Self.query(url, "SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT") == [["Book", "3"], ["Tag", "3"], ["Author", "1"]])
        let book = try Self.query(url, "SELECT Z_ENT, Z_OPT, ZAUTHOR, ZPUBLISHED = 5.0 FROM ZBOOK WHERE Z_PK = 3")
        #expect(book == [["1", "1", "1", "1"]])
        #expect(try Self.query(url, "SELECT Z_ENT FROM ZTAG WHERE Z_PK = 3") == [["2"]])
    }

    /// Animals (abstract) with cats and dogs in one table; owners with a pet (to-one to the
    /// parent, with Core Data's entity column) and a passport (one-to-one, stored on both sides).
    static func zooModel(animalExtras: [PropertyDescription] = [], entities: [EntityDescription] = []) throws -> ManagedObjectModel {
        try ManagedObjectModel(
            entities: entities + [
                EntityDescription(
                    name: "Animal", isAbstract: true, properties: [AttributeDescription(name: "name", type: .string)] + animalExtras),
                EntityDescription(
                    name: "Cat", superentity: "Animal",
                    properties: [AttributeDescription(name: "lives", type: .integer16, defaultValue: Int16(9))]),
                EntityDescription(
                    name: "Dog", superentity: "Animal", properties: [AttributeDescription(name: "breed", type: .string, isOptional: true)]),
                EntityDescription(
                    name: "Owner",
                    properties: [
                        AttributeDescription(name: "name", type: .string),
                        RelationshipDescription(name: "pet", destination: "Animal"),
                        RelationshipDescription(name: "passport", destination: "Passport", inverse: "owner")
                    ]),
                EntityDescription(
                    name: "Passport",
                    properties: [
                        AttributeDescription(name: "number", type: .string),
                        RelationshipDescription(name: "owner", destination: "Owner", inverse: "passport")
                    ])
            ])
    }

    static func makeZoo(at url: URL) throws {
        try makeCoreDataStore(
            at: url, entities: [(1, "Animal", 0, 2), (2, "Cat", 1, 0), (3, "Dog", 1, 0), (4, "Owner", 0, 1), (5, "Passport", 0, 1)],
            [
                "CREATE TABLE ZANIMAL (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZLIVES INTEGER, ZBREED VARCHAR, ZNAME VARCHAR)",
                "CREATE TABLE ZOWNER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZPASSPORT INTEGER, ZPET INTEGER, Z1_PET INTEGER, ZNAME VARCHAR)",
                "CREATE TABLE ZPASSPORT (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZOWNER INTEGER, ZNUMBER VARCHAR)",
                "INSERT INTO ZANIMAL VALUES (1, 2, 1, 9, NULL, 'Tom'), (2, 3, 1, NULL, 'lab', 'Rex')",
                "INSERT INTO ZOWNER VALUES (1, 4, 1, 1, 2, 3, 'Ann')",
                "INSERT INTO ZPASSPORT VALUES (1, 5, 1, 1, 'X1')"
            ])
    }

    @Test func readsAndWritesSubentitiesInTheirRootsTable() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("zoo.sqlite")
        try Self.makeZoo(at: url)
        let model = try Self.zooModel()
        try withMigrationStore(model, at: url) { context in
            let animals = try context.fetch(FetchRequest<ManagedObject>(entityName: "Animal"))
            #expect(Set(animals.map { "\($0.entity.name) \($0.nameValue)" }) == ["Cat Tom", "Dog Rex"])
            #expect(try context.fetch(FetchRequest<ManagedObject>(entityName: "Dog")).map(\.nameValue) == ["Rex"])
            let tom = try #require(animals.first { $0.nameValue == "Tom" })
            #expect(try tom.value(forKey: "lives") as? Int16 == 9)
            let ann = try #require(try context.fetch(FetchRequest<ManagedObject>(entityName: "Owner")).first)
            #expect(ann.related("pet").map { "\($0.entity.name) \($0.nameValue)" } == ["Dog Rex"])
            let passport = try #require(ann.related("passport").first)
            #expect(try passport.value(forKey: "number") as? String == "X1")
            #expect(passport.related("owner").first === ann)

            try insertObject(context, "Dog", ["name": "Fido"])
            let bob = try insertObject(context, "Owner", ["name": "Bob"])
            bob.relate("pet", to: [tom])
            let y2 = try insertObject(context, "Passport", ["number": "Y2"])
            bob.relate("passport", to: [y2])
            try context.save()
        }
        try withMigrationStore(model, at: url) { context in
            #expect(Self.names(try context.fetch(FetchRequest<ManagedObject>(entityName: "Dog"))) == ["Rex", "Fido"])
            let owners = try context.fetch(FetchRequest<ManagedObject>(entityName: "Owner"))
            let bob = try #require(owners.first { $0.nameValue == "Bob" })
            #expect(bob.related("pet").map(\.nameValue) == ["Tom"])
        }
        // The dog's row has Dog's number and a key from Animal's counter; Bob's pet column has
        // the cat's entity number beside its key; Bob's passport names him too (both sides).
        #expect(try Self.query(url, "SELECT Z_PK, Z_ENT FROM ZANIMAL WHERE ZNAME = 'Fido'") == [["3", "3"]])
        #expect(try Self.query(url, "SELECT Z_NAME, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT").map { $0[1] } == ["3", "0", "0", "2", "2"])
        #expect(try Self.query(url, "SELECT ZPET, Z1_PET, ZPASSPORT FROM ZOWNER WHERE ZNAME = 'Bob'") == [["1", "2", "2"]])
        #expect(try Self.query(url, "SELECT ZOWNER FROM ZPASSPORT ORDER BY Z_PK") == [["1"], ["2"]])
    }

    @Test func parentOtherThanTheModelsIsATypedError() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("zoo.sqlite")
        try Self.makeZoo(at: url)
        try Self.alter(url, "UPDATE Z_PRIMARYKEY SET Z_SUPER = 0 WHERE Z_NAME = 'Dog'")
        let error = try #require(try Self.refusal(try Self.zooModel(), at: url))
        #expect(error.code == .storeLayoutMismatch && error.entityName == "Dog" && error.message.contains("Z_SUPER"))
    }

    @Test func missingJoinTableIsATypedErrorNamingIt() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("library.sqlite")
        try Self.makeLibrary(at: url)
        try Self.alter(url, "DROP TABLE Z_1TAGS")
        let error = try #require(try Self.refusal(try Self.libraryModel(), at: url))
        #expect(error.code == .storeLayoutMismatch && error.message.contains("Z_1TAGS") && error.propertyName == "tags")
    }

    // MARK: Migration

    /// The fixture's model with a new attribute with a default, and a name.
    static func studentModelV2() throws -> ManagedObjectModel {
        try studentModel(
            extra: [
                AttributeDescription(name: "grade", type: .integer16, defaultValue: Int16(1)),
                AttributeDescription(name: "name", type: .string, isOptional: true)
            ], versionIdentifier: "2")
    }

    @Test func migratesTheFixtureKeepingCoreDataLayout() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        try withMigrationStore(try Self.studentModel(), at: url) { context in
            let count = try Self.students(context).count
            #expect(count == 10)
        }
        let v2 = try Self.studentModelV2()
        try withMigrationStore(v2, at: url) { context in
            let students = try Self.students(context)
            #expect(students.count == 10 && students[4]?.firstName == "Stan")
            let objects = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student"))
            #expect(objects.allSatisfy { (try? $0.value(forKey: "grade")) as? Int16 == 1 })
            try objects.first?.setValue("Stan Marsh", forKey: "name")
            try insertObject(context, "Student", ["name": "Wendy", "grade": Int16(4)])
            try context.save()
        }
        try withMigrationStore(v2, at: url) { context in
            let count = try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")).count
            #expect(count == 11)
        }
        let columns = try Self.query(url, "SELECT name FROM pragma_table_info('ZSTUDENT') ORDER BY cid").map(\.[0])
        #expect(columns == ["Z_PK", "Z_ENT", "Z_OPT", "ZISOLDDATA", "ZDATA", "ZGRADE", "ZNAME"])
        #expect(try Self.query(url, "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY") == [["1", "Student", "0", "11"]])
        #expect(try Self.query(url, "SELECT ZGRADE, Z_ENT, Z_OPT FROM ZSTUDENT WHERE ZNAME = 'Wendy'") == [["4", "1", "1"]])
        let plist = try Self.propertyList(url)
        #expect(plist["Coherence.modelVersionHash"] as? String == v2.versionHash)
        #expect(plist["Coherence.versionIdentifier"] as? String == "2")
        #expect(plist["NSStoreModelVersionHashes"] is [String: Any])
    }

    @Test func stagedMigrationStartsFromTheVersionThatFitsAStoreNeverOpened() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        let v2 = try Self.studentModelV2()
        var decode = CustomMigrationStage(migratingFrom: try Self.studentModel(versionIdentifier: "1"), to: v2, label: "decode")
        decode.didMigrateHandler = { context in
            for object in try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")) {
                let data = try #require(try object.value(forKey: "data") as? Data)
                let student = try JSONDecoder().decode(FixtureStudent.self, from: data)
                try object.setValue("\(student.firstName) \(student.lastName)", forKey: "name")
            }
        }
        let options = StoreOptions(stagedMigrationManager: StagedMigrationManager([decode]))
        try withMigrationStore(v2, at: url, options: options) { context in
            let names = Self.names(try context.fetch(FetchRequest<ManagedObject>(entityName: "Student")))
            #expect(names.count == 10 && names.contains("Stan Marsh") && names.contains("Tina Belcher"))
        }
        #expect(try Self.query(url, "SELECT count(*) FROM ZSTUDENT WHERE ZNAME IS NOT NULL") == [["10"]])
    }

    @Test func migratesRelationshipsRenumberingEntitiesInCoreDataLayout() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("library.sqlite")
        try Self.makeLibrary(at: url)
        try withMigrationStore(try Self.libraryModel(), at: url) { _ in }
        // Version 2: books get a page count, and publishers are new.
        let v2 = try Self.libraryModel(
            bookExtras: [AttributeDescription(name: "pages", type: .integer32, defaultValue: Int32(0))],
            entities: [EntityDescription(name: "Publisher", properties: [AttributeDescription(name: "name", type: .string)])])
        try withMigrationStore(v2, at: url) { context in
            let tags = try context.fetch(FetchRequest<ManagedObject>(entityName: "Tag"))
            let classic = try #require(tags.first { $0.nameValue == "classic" })
            #expect(Self.names(classic.related("books"), "title") == ["Earthsea", "Lathe"])
            let author = try #require(try context.fetch(FetchRequest<ManagedObject>(entityName: "Author")).first)
            #expect(Self.names(author.related("books"), "title") == ["Earthsea", "Lathe"])
            let earthsea = try #require(author.related("books").first { (try? $0.value(forKey: "title")) as? String == "Earthsea" })
            #expect(try earthsea.value(forKey: "price") as? Decimal == Decimal(string: "12.5"))
            #expect(try earthsea.value(forKey: "pages") as? Int32 == 0)
            try insertObject(context, "Publisher", ["name": "Ace"])
            try context.save()
        }
        // The model's numbers now (Author 1, Book 2, Publisher 3, Tag 4), in Core Data's names.
        #expect(
            try Self.query(url, "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
                == [["1", "Author", "0", "1"], ["2", "Book", "0", "2"], ["3", "Publisher", "0", "1"], ["4", "Tag", "0", "2"]])
        #expect(try Self.query(url, "SELECT Z_2BOOKS, Z_4TAGS FROM Z_2TAGS ORDER BY 1, 2") == [["1", "1"], ["1", "2"], ["2", "2"]])
        #expect(try Self.query(url, "SELECT DISTINCT Z_ENT FROM ZBOOK") == [["2"]])
        #expect(try Self.query(url, "SELECT ZNAME FROM ZPUBLISHER") == [["Ace"]])
    }

    @Test func failedMigrationLeavesTheCoreDataStoreAsItWas() throws {
        let dir = try TemporaryDirectory()
        let url = try Self.fixtureCopy(in: dir)
        try withMigrationStore(try Self.studentModel(), at: url) { _ in }
        func state() throws -> [[String]] {
            try Self.query(url, "SELECT type, name, sql FROM sqlite_master ORDER BY name")
                + Self.query(url, "SELECT * FROM Z_PRIMARYKEY") + Self.query(url, "SELECT Z_UUID, hex(Z_PLIST) FROM Z_METADATA")
                + Self.query(url, "SELECT Z_PK, Z_ENT, Z_OPT, ZISOLDDATA, hex(ZDATA) FROM ZSTUDENT ORDER BY Z_PK")
        }
        let before = try state()
        // A required attribute without a default: the ten rows have no value for it.
        let v2 = try Self.studentModel(extra: [AttributeDescription(name: "name", type: .string)])
        var caught: CoherenceError?
        do {
            try withMigrationStore(v2, at: url) { _ in }
        } catch let error as CoherenceError {
            caught = error
        }
        #expect(caught?.code == .migrationMissingValues && caught?.propertyName == "name")
        #expect(try state() == before)
        try withMigrationStore(try Self.studentModel(), at: url) { context in
            let count = try Self.students(context).count
            #expect(count == 10)
        }
    }

    @Test func toManyWithoutInverseUsesCoreDataJoinTable() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("shelves.sqlite")
        try Self.makeCoreDataStore(
            at: url, entities: [(1, "Item", 0, 2), (2, "Shelf", 0, 1)],
            [
                "CREATE TABLE ZITEM (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR)",
                "CREATE TABLE ZSHELF (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR)",
                "CREATE TABLE Z_2ITEMS (Z_2SHELF INTEGER, Z_1ITEMS INTEGER, PRIMARY KEY (Z_2SHELF, Z_1ITEMS))",
                "INSERT INTO ZITEM VALUES (1, 1, 1, 'cup'), (2, 1, 1, 'jar')",
                "INSERT INTO ZSHELF VALUES (1, 2, 1, 'top')",
                "INSERT INTO Z_2ITEMS VALUES (1, 2)"
            ])
        let model = try ManagedObjectModel(entities: [
            EntityDescription(name: "Item", properties: [AttributeDescription(name: "name", type: .string)]),
            EntityDescription(
                name: "Shelf",
                properties: [
                    AttributeDescription(name: "name", type: .string),
                    RelationshipDescription(name: "items", destination: "Item", isToMany: true)
                ])
        ])
        try withMigrationStore(model, at: url) { context in
            let shelf = try #require(try context.fetch(FetchRequest<ManagedObject>(entityName: "Shelf")).first)
            #expect(shelf.related("items").map(\.nameValue) == ["jar"])
            let items = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            shelf.relate("items", to: items)
            try context.save()
        }
        #expect(try Self.query(url, "SELECT Z_2SHELF, Z_1ITEMS FROM Z_2ITEMS ORDER BY 2") == [["1", "1"], ["1", "2"]])
    }

    @Test func migratesAHierarchyRenumberingItsEntities() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("zoo.sqlite")
        try Self.makeZoo(at: url)
        try withMigrationStore(try Self.zooModel(), at: url) { _ in }
        // Version 2: animals have a color, and birds are new (every entity after Animal is
        // renumbered, so every table is made again).
        let v2 = try Self.zooModel(
            animalExtras: [AttributeDescription(name: "color", type: .string, defaultValue: "grey")],
            entities: [EntityDescription(name: "Bird", superentity: "Animal", properties: [])])
        try withMigrationStore(v2, at: url) { context in
            let dogs = try context.fetch(FetchRequest<ManagedObject>(entityName: "Dog"))
            #expect(dogs.map(\.nameValue) == ["Rex"] && dogs.allSatisfy { (try? $0.value(forKey: "color")) as? String == "grey" })
            let ann = try #require(try context.fetch(FetchRequest<ManagedObject>(entityName: "Owner")).first)
            #expect(ann.related("pet").map(\.nameValue) == ["Rex"])
            #expect(try ann.related("passport").first?.value(forKey: "number") as? String == "X1")
            try insertObject(context, "Cat", ["name": "Kit", "color": "black"])
            try context.save()
        }
        #expect(
            try Self.query(url, "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
                == [
                    ["1", "Animal", "0", "3"], ["2", "Bird", "1", "0"], ["3", "Cat", "1", "0"], ["4", "Dog", "1", "0"],
                    ["5", "Owner", "0", "1"], ["6", "Passport", "0", "1"]
                ])
        #expect(
            try Self.query(url, "SELECT Z_PK, Z_ENT, ZCOLOR FROM ZANIMAL ORDER BY Z_PK") == [
                ["1", "3", "grey"], ["2", "4", "grey"], ["3", "3", "black"]
            ])
        // The one-to-one's second side is kept in the table made again.
        #expect(try Self.query(url, "SELECT Z_ENT, ZOWNER FROM ZPASSPORT") == [["6", "1"]])
    }
}
