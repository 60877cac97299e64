import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// RCDataKit's `Updatable` setters over the floating-point values a plain `==` gets wrong: NaN
// (never equal to itself), −0.0 (equal to 0.0, but stored apart) and ±infinity (whose distance
// to itself is NaN). A setter reports a write exactly when the object becomes changed.

@Suite struct UpdatableFloatingPointTests {
    static let values: [Double] = [
        0.0, -0.0, 1.5, .nan, -.nan, Double(nan: 7, signaling: false), .infinity, -.infinity, .greatestFiniteMagnitude,
        .leastNonzeroMagnitude
    ]

    /// The same value as the store keeps it: bit for bit.
    static func same(_ a: Double, _ b: Double) -> Bool { a.bitPattern == b.bitPattern }

    func subject(_ type: StoreType, _ dir: TemporaryDirectory) throws -> (ManagedObjectContext, TestSubject) {
        let coordinator = try makeCoordinator(type, in: dir, model: try makeHelpersModel())
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let subject = try context.performAndWait { () throws in
            let s = TestSubject(context: context)
            s.name = "x"
            try context.save()
            return s
        }
        return (context, subject)
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func updateWritesExactlyTheValuesThatChangeTheObject(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("updatable-float-\(type)")
        let (context, s) = try subject(type, dir)
        try context.performAndWait { () throws in
            for current in Self.values {
                for value in Self.values {
                    s.height = current
                    s.weight = current
                    try context.save()
                    let label = "\(current) → \(value)"
                    let wrote = s.update(\.height, value: value)
                    #expect(wrote == !Self.same(current, value), "\(label)")
                    #expect(wrote == s.hasChanges, "\(label)")
                    #expect(Self.same(s.height, value) || !wrote, "\(label)")
                    try context.save()
                    let wroteOptional = s.update(\.weight, value: value)
                    #expect(wroteOptional == !Self.same(current, value), "optional \(label)")
                    #expect(wroteOptional == s.hasChanges, "optional \(label)")
                    context.rollback()
                    #expect(s.updateIfAvailable(\.weight, value: Optional(value)) == s.hasChanges, "updateIfAvailable \(label)")
                    context.rollback()
                }
            }
        }
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func minimumChangeWritesExactlyTheValuesOutsideTheRange(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("updatable-float-min-\(type)")
        let (context, s) = try subject(type, dir)
        try context.performAndWait { () throws in
            for current in Self.values {
                for value in Self.values {
                    s.height = current
                    try context.save()
                    let label = "\(current) → \(value)"
                    let wrote = s.update(\.height, value: value, minimumChange: 0.5)
                    let within = (value - current).magnitude <= 0.5
                    #expect(wrote == (!Self.same(current, value) && !within), "\(label)")
                    #expect(wrote == s.hasChanges, "\(label)")
                    context.rollback()
                    #expect(s.updateIfAvailable(\.height, value: Optional(value), minimumChange: 0.5) == wrote, "\(label)")
                    context.rollback()
                }
            }
        }
    }

    /// nil ↔ value on an optional attribute: every change is a write, nil to nil is none.
    @Test func nilAndValuesOfAnOptionalAttribute() throws {
        let dir = try TemporaryDirectory()
        let (context, s) = try subject(.sqlite, dir)
        try context.performAndWait { () throws in
            #expect(s.update(\.weight, value: nil) == false)
            #expect(!s.hasChanges)
            #expect(s.update(\.weight, value: .nan) == true)
            try context.save()
            #expect(s.update(\.weight, value: .nan) == false)
            #expect(!s.hasChanges)
            #expect(s.update(\.weight, value: nil) == true)
            #expect(s.hasChanges)
            try context.save()
            #expect(s.update(\.weight, value: -0.0) == true)
            try context.save()
            #expect(s.update(\.weight, value: 0.0) == true)
            try context.save()
            #expect(s.weight.map { $0.sign == .plus } == true)
        }
        // What was written is what the store keeps: read back in a new context.
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let stored = try other.performAndWait { () throws in try #require(try other.fetch(FetchRequest<TestSubject>()).first).weight }
        #expect(stored.map { $0 == 0 && $0.sign == .plus } == true)
    }
}
