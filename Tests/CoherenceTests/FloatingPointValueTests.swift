import CCoherenceSQLite
import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Floating-point attributes of every kind, required and optional.
final class Reading: ManagedObject {
    @Attribute var label: String = ""
    @Attribute var value: Double = 0
    @Attribute var optionalValue: Double?
    @Attribute var single: Float = 0
    @Attribute var optionalSingle: Float?
    @Attribute var at: Date?
}

func makeReadingModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(types: [Reading.self])
}

/// Doubles whose bits a store must keep: NaNs (quiet, signaling, negative, with a payload),
/// infinities, both zeros, subnormals and the extremes.
let specialDoubles: [Double] = [
    .nan, -.nan, .signalingNaN, Double(nan: 0x5_1234_5678, signaling: false), Double(nan: 0x77, signaling: true),
    .infinity, -.infinity, -0.0, 0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, Double(sign: .plus, exponent: -1030, significand: 1),
    Double(sign: .minus, exponent: -1062, significand: 1.25),
    .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNormalMagnitude, 1.5, -7
]

/// The same for `Float`.
let specialFloats: [Float] = [
    .nan, -.nan, .signalingNaN, Float(nan: 0x1234, signaling: false), Float(nan: 0x3, signaling: true),
    .infinity, -.infinity, -0.0, 0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, Float(sign: .plus, exponent: -133, significand: 1),
    .greatestFiniteMagnitude, .leastNormalMagnitude, 0.1, -3
]

@Suite("Floating-point values: stored bit for bit")
struct FloatingPointValueTests {
    /// A coordinator with one store of `type` for the `Reading` model.
    static func coordinator(_ type: StoreType, in dir: TemporaryDirectory, model: ManagedObjectModel? = nil) throws
        -> PersistentStoreCoordinator
    {
        let c = PersistentStoreCoordinator(managedObjectModel: try model ?? makeReadingModel())
        try c.addPersistentStore(type: type, at: type == .sqlite ? dir.file("readings.sqlite") : nil)
        return c
    }

    /// Saves one reading per special value through a context, then reads them back in a new
    /// context (for SQLite, through a new coordinator, so from the file): every value keeps its bits.
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func valuesReadBackBitForBit(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let model = try makeReadingModel()
        let coordinator = try Self.coordinator(type, in: dir, model: model)
        let count = max(specialDoubles.count, specialFloats.count)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            for i in 0..<count {
                let r = Reading(context: context)
                r.label = String(i)
                r.value = specialDoubles[i % specialDoubles.count]
                r.optionalValue = specialDoubles[i % specialDoubles.count]
                r.single = specialFloats[i % specialFloats.count]
                r.optionalSingle = specialFloats[i % specialFloats.count]
                r.at = Date(timeIntervalSinceReferenceDate: specialDoubles[i % specialDoubles.count])
            }
            try context.save()
        }
        let reader = type == .sqlite ? try Self.coordinator(.sqlite, in: dir, model: model) : coordinator
        let other = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: reader)
        let read = try await other.perform {
            try other.fetch(FetchRequest<Reading>()).map {
                (
                    Int($0.label) ?? -1, $0.value.bitPattern, $0.optionalValue?.bitPattern, $0.single.bitPattern,
                    $0.optionalSingle?.bitPattern, $0.at?.timeIntervalSinceReferenceDate
                )
            }
        }
        #expect(read.count == count)
        for (i, value, optionalValue, single, optionalSingle, at) in read {
            let d = specialDoubles[i % specialDoubles.count], f = specialFloats[i % specialFloats.count]
            #expect(value == d.bitPattern, "Double \(d) read back as \(Double(bitPattern: value))")
            #expect(optionalValue == d.bitPattern, "Double? \(d) read back as \(optionalValue.map { Double(bitPattern: $0) } as Any)")
            #expect(single == f.bitPattern, "Float \(f) read back as \(Float(bitPattern: single))")
            #expect(optionalSingle == f.bitPattern, "Float? \(f) read back as \(optionalSingle.map { Float(bitPattern: $0) } as Any)")
            // A date is its instant: NaN stays NaN, −0.0 is the instant 0.
            if d.isNaN { #expect(at?.isNaN == true, "Date(NaN) read back as \(at as Any)") } else { #expect(at == d) }
        }
    }

    /// The encoding in the file: an ordinary value is a REAL (so SQL sorts and compares it as a
    /// number), NaN and −0.0 are an 8-byte BLOB of the bit pattern, most significant byte first.
    @Test func specialValuesAreEightByteBlobsInTheFile() throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.coordinator(.sqlite, in: dir)
        let entity = try #require(coordinator.managedObjectModel.entity(for: Reading.self))
        let payload = Double(nan: 0x1234, signaling: false)
        try insertObjects(
            coordinator,
            [
                rowInsert(entity, ["label": .text("nan"), "value": payload.storedValue]),
                rowInsert(entity, ["label": .text("-0"), "value": (-0.0).storedValue]),
                rowInsert(entity, ["label": .text("inf"), "value": Double.infinity.storedValue]),
                rowInsert(entity, ["label": .text("1.5"), "value": 1.5.storedValue])
            ])
        let c = try SQLiteConnection(location: .file(dir.file("readings.sqlite").path))
        let rows = try c.prepare("SELECT label, typeof(value), hex(value) FROM Reading ORDER BY Z_PK").rows {
            [$0.string(0), $0.string(1), $0.string(2)]
        }
        let nanHex = String(payload.bitPattern, radix: 16, uppercase: true)
        #expect(
            rows
                == [
                    ["nan", "blob", nanHex], ["-0", "blob", "8000000000000000"],
                    ["inf", "real", "496E66"], ["1.5", "real", "312E35"]
                ].map { $0 })
    }

    /// Change detection compares stored representations: −0.0 after 0.0 is a change, NaN after
    /// the same NaN is not, another NaN payload is.
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func changesAreBitPatterns(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.coordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            let r = Reading(context: context)
            r.value = 0.0
            r.optionalValue = .nan
            r.single = 0
            r.optionalSingle = .nan
            try context.save()

            r.optionalValue = .nan
            r.optionalSingle = .nan
            r.value = 0.0
            #expect(!context.hasChanges, "the same NaN and the same zero are no change")
            #expect(!r.isUpdated)

            r.value = -0.0
            #expect(context.hasChanges, "−0.0 after 0.0 is a change")
            #expect(r.changedValues().keys.sorted() == ["value"])
            try context.save()
            #expect(r.value.bitPattern == (-0.0).bitPattern)

            r.single = -0.0
            #expect(r.changedValues().keys.sorted() == ["single"])
            r.single = 0
            #expect(!r.isUpdated, "back to the committed +0.0")

            r.optionalValue = Double(nan: 7, signaling: false)
            #expect(r.changedValues().keys.sorted() == ["optionalValue"], "another NaN payload is another value")
        }
    }

    /// A context's fetch evaluates its unsaved objects in memory and its saved rows in the
    /// store: both the same way.
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func contextFetchesAgreeOnSavedAndUnsavedValues(_ type: StoreType) async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.coordinator(type, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let saved: [Double] = [1.5, .nan, -0.0, 0, -1, .infinity, 3]
        let unsaved: [Double] = [-0.0, .nan, 2, -.infinity, -.nan]
        let (labels, count) = try await context.perform {
            var readings: [Reading] = []
            for (i, v) in saved.enumerated() {
                let r = Reading(context: context)
                r.label = "s\(i)"
                r.value = v
                readings.append(r)
            }
            try context.save()
            readings[0].value = .nan  // 1.5 becomes NaN, unsaved
            readings[6].value = -0.0  // 3 becomes −0.0, unsaved
            for (i, v) in unsaved.enumerated() {
                let r = Reading(context: context)
                r.label = "u\(i)"
                r.value = v
            }
            let request = FetchRequest<Reading>(
                predicate: #Predicate { !($0.value < 0) }, sortBy: [SortDescriptor(\.value), SortDescriptor(\.label)])
            return (try context.fetch(request).map(\.label), try context.count(for: request))
        }
        var all = saved.enumerated().map { ("s\($0.offset)", $0.element) } + unsaved.enumerated().map { ("u\($0.offset)", $0.element) }
        all[0].1 = .nan
        all[6].1 = -0.0
        let expected = all.filter { !($0.1 < 0) }.sorted { a, b in
            let c = floatingOrder(a.1, b.1)
            return c != 0 ? c < 0 : a.0 < b.0
        }.map(\.0)
        #expect(labels == expected)
        #expect(count == expected.count)
    }

    /// The dynamic API stores the same forms as the typed one.
    @Test func dynamicAPIKeepsBits() async throws {
        let dir = try TemporaryDirectory()
        let coordinator = try Self.coordinator(.sqlite, in: dir)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        let payload = Double(nan: 0x42, signaling: true)
        let read = try await context.perform {
            let r = Reading(context: context)
            try r.setValue(payload, forKey: "value")
            try r.setValue(Float(-0.0), forKey: "optionalValue")
            try r.setValue(-Float.signalingNaN, forKey: "single")
            try context.save()
            context.refresh(r, mergeChanges: false)
            return (
                (try r.value(forKey: "value") as? Double)?.bitPattern, (try r.value(forKey: "optionalValue") as? Double)?.bitPattern,
                (try r.value(forKey: "single") as? Float)?.bitPattern
            )
        }
        #expect(read.0 == payload.bitPattern)
        #expect(read.1 == (-0.0).bitPattern)
        #expect(read.2 == (-Float.signalingNaN).bitPattern)
    }
}

/// A floating-point attribute with a uniqueness constraint.
final class Gauge: ManagedObject {
    @Attribute(.unique) var level: Double = 0
}

@Suite("Floating-point values: uniqueness and validation")
struct FloatingPointConstraintTests {
    /// Uniqueness compares stored values, as change detection does: the same NaN twice
    /// conflicts, −0.0 next to 0.0 does not — in both stores.
    @Test(arguments: [StoreType.sqlite, .inMemory])
    func uniquenessComparesStoredValues(_ type: StoreType) throws {
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Gauge.self]))
        try coordinator.addPersistentStore(type: type, at: type == .sqlite ? dir.file("g.sqlite") : nil)
        let gauge = try #require(coordinator.managedObjectModel.entity(for: Gauge.self))
        func insert(_ levels: [Double]) throws {
            try insertObjects(coordinator, levels.map { rowInsert(gauge, ["level": $0.storedValue]) })
        }
        try insert([0.0, -0.0, .nan, Double(nan: 1, signaling: false)])
        #expect(try coordinator.count(for: FetchRequest<Gauge>()) == 4)
        for level in [Double.nan, -0.0, 0.0] {
            #expect(throws: CoherenceError.self, "\(level) again") { try insert([level]) }
        }
        #expect(try coordinator.count(for: FetchRequest<Gauge>()) == 4)
    }

    /// A NaN passes minimum and maximum rules (it is below and above nothing, as in Swift);
    /// −0.0 is checked as 0.
    @Test func validationRulesSeeTheNumber() async throws {
        final class Bounded: ManagedObject {
            @Attribute(validation: .init(minimum: -10, maximum: -1)) var ratio: Double = -5
        }
        let dir = try TemporaryDirectory()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Bounded.self]))
        try coordinator.addPersistentStore(type: .sqlite, at: dir.file("b.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator)
        try await context.perform {
            let b = Bounded(context: context)
            b.ratio = .nan
            try context.save()
            b.ratio = -0.0
            #expect(throws: CoherenceError.self, "−0.0 is above the maximum −1") { try context.save() }
            b.ratio = -5
            try context.save()
        }
    }
}
