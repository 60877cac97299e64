import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

// `Updatable` compares values as the store keeps them, for every attribute type: values the
// store keeps alike are no write (a date of −0.0 seconds and the reference date are one
// instant; a relative URL and its absolute form are one string), values it keeps apart are.
// A setter reports a write exactly when the object becomes changed, and a store keeps the date
// of −0.0 seconds as the instant 0, in memory as in a file.

final class Appointment: ManagedObject, Updatable {
    @Attribute var at: Date = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var optionalAt: Date?
    @Attribute var link: URL?
    @Attribute var level: Float = 0
    @Attribute var amount: Decimal?
}

@Suite struct UpdatableStoredValueTests {
    static let negativeZero = Date(timeIntervalSinceReferenceDate: -0.0)

    func context(_ type: StoreType, _ dir: TemporaryDirectory) throws -> ManagedObjectContext {
        let coordinator = try makeCoordinator(type, in: dir, model: try ManagedObjectModel(types: [Appointment.self]))
        return ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func theDateOfNegativeZeroSecondsIsTheReferenceDate(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("updatable-date-\(type)")
        let context = try context(type, dir)
        try context.performAndWait { () throws in
            let a = Appointment(context: context)
            try context.save()
            // The same instant: no write, every time.
            for _ in 0..<2 {
                #expect(a.update(\.at, value: Self.negativeZero) == false)
                #expect(!a.hasChanges)
            }
            // nil to the instant 0 is a change; the object and the store read +0.
            #expect(a.update(\.optionalAt, value: Self.negativeZero) == true)
            #expect(a.hasChanges)
            try context.save()
            #expect(a.optionalAt?.timeIntervalSinceReferenceDate.sign == .plus)
            #expect(a.update(\.optionalAt, value: Date(timeIntervalSinceReferenceDate: 0)) == false)
            #expect(a.update(\.optionalAt, value: Self.negativeZero) == false)
            #expect(!a.hasChanges)
        }
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: context.persistentStoreCoordinator)
        let stored = try other.performAndWait { () throws in
            try #require(try other.fetch(FetchRequest<Appointment>()).first?.optionalAt).timeIntervalSinceReferenceDate
        }
        #expect(stored == 0 && stored.sign == .plus)
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func aURLIsItsAbsoluteString(_ type: StoreType) throws {
        let dir = try TemporaryDirectory("updatable-url-\(type)")
        let context = try context(type, dir)
        let base = try #require(URL(string: "http://example.com/a/"))
        let relative = try #require(URL(string: "b", relativeTo: base))
        let absolute = try #require(URL(string: "http://example.com/a/b"))
        try context.performAndWait { () throws in
            let a = Appointment(context: context)
            a.link = absolute
            try context.save()
            #expect(a.update(\.link, value: relative) == false)
            #expect(a.updateIfAvailable(\.link, value: relative) == false)
            #expect(!a.hasChanges)
            #expect(a.update(\.link, value: try #require(URL(string: "http://example.com/a/c"))) == true)
            #expect(a.hasChanges)
            #expect(a.update(\.link, value: nil) == true)
            try context.save()
            #expect(a.update(\.link, value: nil) == false)
            #expect(a.update(\.link, value: relative) == true)
            #expect(a.link?.absoluteString == "http://example.com/a/b")
        }
    }

    /// Every pair of values, written over each other: a write exactly when the stored value
    /// changes, and what the store then keeps is the new value.
    func everyPair<V: Equatable>(
        _ type: StoreType, _ label: String, _ keyPath: ReferenceWritableKeyPath<Appointment, V>, _ values: [V],
        same: (V, V) -> Bool
    ) throws {
        let dir = try TemporaryDirectory("updatable-\(label)-\(type)")
        let context = try context(type, dir)
        let coordinator = context.persistentStoreCoordinator
        try context.performAndWait { () throws in
            let a = Appointment(context: context)
            try context.save()
            for current in values {
                for value in values {
                    a[keyPath: keyPath] = current
                    try context.save()
                    let wrote = a.update(keyPath, value: value)
                    #expect(wrote == !same(current, value), "\(label) \(current) → \(value)")
                    #expect(wrote == a.hasChanges, "\(label) \(current) → \(value)")
                    try context.save()
                    let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
                    let stored = try other.performAndWait { () throws in
                        try #require(try other.fetch(FetchRequest<Appointment>()).first)[keyPath: keyPath]
                    }
                    #expect(same(stored, value), "\(label) \(current) → \(value) stored \(stored)")
                }
            }
        }
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func floatsAreComparedBitForBit(_ type: StoreType) throws {
        let values: [Float] = [0, -0.0, 1.5, .nan, -.nan, Float(nan: 5, signaling: false), .infinity, -.infinity, .leastNonzeroMagnitude]
        try everyPair(type, "float", \.level, values) { $0.bitPattern == $1.bitPattern }
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func decimalsAreComparedByValue(_ type: StoreType) throws {
        let values: [Decimal?] = [
            nil, 0, 1, Decimal(sign: .plus, exponent: -1, significand: 10), .nan, -1, Decimal(sign: .plus, exponent: 20, significand: 3)
        ]
        try everyPair(type, "decimal", \.amount, values) { a, b in
            switch (a, b) {
            case (nil, nil): return true
            case (let x?, let y?): return x.isNaN ? y.isNaN : (!y.isNaN && x == y)
            default: return false
            }
        }
    }

    @Test(arguments: [StoreType.sqlite, .inMemory])
    func datesAreComparedAsInstants(_ type: StoreType) throws {
        let values: [Date?] = [
            nil, Date(timeIntervalSinceReferenceDate: 0), Self.negativeZero, Date(timeIntervalSinceReferenceDate: .nan),
            Date(timeIntervalSinceReferenceDate: .infinity), Date(timeIntervalSinceReferenceDate: 1.000000001)
        ]
        try everyPair(type, "date", \.optionalAt, values) { a, b in
            a.map { $0.timeIntervalSinceReferenceDate.isNaN ? Double.nan.bitPattern : ($0.timeIntervalSinceReferenceDate + 0).bitPattern }
                == b.map {
                    $0.timeIntervalSinceReferenceDate.isNaN ? Double.nan.bitPattern : ($0.timeIntervalSinceReferenceDate + 0).bitPattern
                }
        }
    }
}
