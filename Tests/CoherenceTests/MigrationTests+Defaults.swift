import Foundation
import Testing
@testable import Coherence
@testable import CoherenceContext
@testable import CoherencePostgreSQL
@testable import CoherenceStore

extension MigrationTests {
    /// An attribute of each type added with a default (quotes in texts and URIs, dates, UUIDs,
    /// blobs, decimals) takes it in every existing row.
    @Test(arguments: storedTypes)
    func addedAttributesTakeTheirDefaults(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try MigrationTests.fill(url)
        let date = Date(timeIntervalSinceReferenceDate: 12345.5)
        let uuid = UUID()
        let data = Data([0, 1, 0x27, 0xff])
        let added: [PropertyDescription] = [
            AttributeDescription(name: "s", type: .string, defaultValue: "O'Brien x; DROP"),
            AttributeDescription(name: "d", type: .date, defaultValue: date),
            AttributeDescription(name: "u", type: .uuid, defaultValue: uuid),
            AttributeDescription(name: "b", type: .binaryData, defaultValue: data),
            AttributeDescription(name: "f", type: .boolean, defaultValue: true),
            AttributeDescription(name: "dec", type: .decimal, defaultValue: Decimal(string: "12.345")!),
            AttributeDescription(name: "uri", type: .uri, defaultValue: URL(string: "https://x.org/a'b")!),
            AttributeDescription(name: "dbl", type: .double, defaultValue: -0.1)
        ]
        let v2 = try ManagedObjectModel(entities: [MigrationTests.person(indexes: [["age"]], adding: added), MigrationTests.town()])
        try withMigrationStore(v2, at: url) { context in
            let people = try fetchByName(context, "Person")
            #expect(people.count == 3)
            for p in people {
                #expect(try p.value(forKey: "s") as? String == "O'Brien x; DROP")
                #expect(try p.value(forKey: "d") as? Date == date)
                #expect(try p.value(forKey: "u") as? UUID == uuid)
                #expect(try p.value(forKey: "b") as? Data == data)
                #expect(try p.value(forKey: "f") as? Bool == true)
                #expect(try p.value(forKey: "dec") as? Decimal == Decimal(string: "12.345")!)
                #expect(try p.value(forKey: "uri") as? URL == URL(string: "https://x.org/a'b")!)
                #expect(try p.value(forKey: "dbl") as? Double == -0.1)
            }
        }
    }
}

extension MigrationTests {
    /// Floating-point defaults a SQL number cannot spell (±infinity, −0.0, NaN) and a text
    /// default with a NUL (SQLite; PostgreSQL text cannot hold one) reach every existing row
    /// exactly: not as NULL, 0 or a failed migration.
    @Test(arguments: storedTypes)
    func addedAttributesTakeDefaultsNoSQLNumberSpells(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let url = try migrationStoreURL(type, dir)
        try MigrationTests.fill(url)
        var added: [PropertyDescription] = [
            AttributeDescription(name: "up", type: .double, defaultValue: Double.infinity),
            AttributeDescription(name: "down", type: .double, defaultValue: -Double.infinity),
            AttributeDescription(name: "nz", type: .double, defaultValue: -0.0),
            AttributeDescription(name: "nan", type: .double, defaultValue: Double.nan),
            AttributeDescription(name: "fup", type: .float, defaultValue: Float.infinity)
        ]
        if type == .sqlite { added.append(AttributeDescription(name: "nul", type: .string, defaultValue: "a\u{0}b")) }
        let v2 = try ManagedObjectModel(entities: [MigrationTests.person(indexes: [["age"]], adding: added), MigrationTests.town()])
        try withMigrationStore(v2, at: url) { context in
            let people = try fetchByName(context, "Person")
            #expect(people.count == 3)
            for p in people {
                #expect(try p.value(forKey: "up") as? Double == .infinity)
                #expect(try p.value(forKey: "down") as? Double == -.infinity)
                #expect((try p.value(forKey: "nz") as? Double)?.bitPattern == (-0.0 as Double).bitPattern)
                #expect((try p.value(forKey: "nan") as? Double)?.isNaN == true)
                #expect(try p.value(forKey: "fup") as? Float == .infinity)
                if type == .sqlite { #expect(try p.value(forKey: "nul") as? String == "a\u{0}b") }
            }
        }
    }
}
