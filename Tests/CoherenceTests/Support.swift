import Foundation
@testable import Coherence

/// A temporary directory for one test, removed when the value goes away.
final class TemporaryDirectory {
    let url: URL
    init(_ name: String = #function) throws {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("coherence-tests-\(safe)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    func file(_ name: String) -> URL { url.appendingPathComponent(name) }
    deinit { try? FileManager.default.removeItem(at: url) }
}

// MARK: A typed test model

final class Person: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var email: String?
    @Attribute var age: Int = 0
    @Attribute var score: Double = 0
    @Attribute var createdAt: Date?
    @Relationship(inverse: "people") var town: Town?
    @Relationship(inverse: "members") var clubs: Set<Club>
    override class var indexes: [[String]] { [["age"]] }
}

final class Town: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Attribute var population: Int = 0
    @Relationship(inverse: "town", deleteRule: .cascade) var people: Set<Person>
}

final class Club: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "clubs") var members: Set<Person>
}

/// Every attribute type.
final class Sample: ManagedObject {
    @Attribute var i: Int = 0
    @Attribute var i16: Int16 = 0
    @Attribute var i32: Int32 = 0
    @Attribute var i64: Int64 = 0
    @Attribute var d: Double = 0
    @Attribute var f: Float = 0
    @Attribute var b: Bool = false
    @Attribute var s: String = ""
    @Attribute var data: Data?
    @Attribute var date: Date?
    @Attribute var uuid: UUID?
    @Attribute var url: URL?
    @Attribute var decimal: Decimal?
    @Attribute var optionalInt: Int?
    @Attribute var optionalString: String?
}

class Shape: ManagedObject {
    @Attribute var label: String = ""
    override class var isAbstractEntity: Bool { self == Shape.self }
}
final class Circle: Shape {
    @Attribute var radius: Double = 0
}
final class Square: Shape {
    @Attribute var side: Double = 0
}

func makeTestModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(types: [Person.self, Town.self, Club.self, Sample.self, Circle.self, Square.self])
}
