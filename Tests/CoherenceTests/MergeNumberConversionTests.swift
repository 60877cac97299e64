import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

/// Managed by an integer; a decimal, a 16-bit integer and a decimal-keyed sibling for the
/// conversions of `NSNumber`s from `JSONSerialization`.
final class MergeNumberItem: ManagedObject {
    @Attribute var id: Int = 0
    @Attribute var small: Int16 = 0
    @Attribute var amount: Decimal = 0
    @Attribute var name: String = ""
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "id"] }
}

/// Managed by a decimal.
final class MergeDecimalKeyed: ManagedObject {
    @Attribute var code: Decimal = 0
    @Attribute var label: String = ""
    override class var entityUserInfo: [String: any Sendable] { ["uniquenessAttributes": "code"] }
}

/// A decoded JSON payload, handed to an action (the values are immutable `NSNumber`s and strings).
struct JSONPayload: @unchecked Sendable {
    let objects: [[String: Any]]
    init(_ text: String) throws {
        objects = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] ?? []
    }
}

@Suite("Merge: numbers from JSON", .timeLimit(.minutes(5)))
struct MergeNumberConversionTests {
    func makeConnect(_ dir: TemporaryDirectory) throws -> ActConnect {
        let model = try ManagedObjectModel(types: [MergeNumberItem.self, MergeDecimalKeyed.self])
        let connect = ActConnect(name: "MergeNumbers", managedObjectModel: model)
        connect.storeLocation = dir.url
        try connect.start()
        return connect
    }

    func stored(_ connect: ActConnect) async throws -> [String] {
        let context = connect.newBackgroundContext()
        return try await context.perform {
            try context.fetch(FetchRequest<MergeNumberItem>(sortBy: [SortDescriptor(\.id)])).map {
                "\($0.id) \($0.small) \($0.amount) \($0.name)"
            }
        }
    }

    /// Integers past 2^53 and past `Int64.max`, and decimals past a `Double`'s precision or a
    /// `Decimal`'s range: exact, or `.invalidValue` with nothing saved — never a wrapped,
    /// rounded or NaN value.
    @Test func numbersAreTakenExactlyOrRefused() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeConnect(dir)
        let good = try JSONPayload(
            #"[{"id": 9007199254740993, "small": 7, "amount": 12345678901234567, "name": "big"}, {"id": -3, "amount": 0.1, "name": "tenth"}, {"id": 5, "amount": 18446744073709551615, "name": "max"}]"#
        )
        let summary = try await runMerge(connect, MergeNumberItem.self) { try $0.merge(objects: good.objects, for: MergeNumberItem.self) }
        #expect(summary == MergeSummary(inserted: 3, updated: 0, deleted: 0, saved: true))
        let expected = ["-3 0 0.1 tenth", "5 0 18446744073709551615 max", "9007199254740993 7 12345678901234567 big"]
        #expect(try await stored(connect) == expected)
        // The same payload again changes nothing.
        #expect(
            try await runMerge(connect, MergeNumberItem.self) { try $0.merge(objects: good.objects, for: MergeNumberItem.self) }
                == MergeSummary())

        for bad in [
            #"[{"id": 18446744073709551615, "name": "wraps to -1"}]"#, #"[{"id": 9223372036854775808, "name": "wraps to Int64.min"}]"#,
            #"[{"id": 1e19, "name": "saturates"}]"#, #"[{"id": 1, "small": 40000}]"#, #"[{"id": 1, "amount": 1.5e300}]"#,
            #"[{"id": 1, "small": 2.5}]"#,
            // A JSON boolean is not a number, for every integer width alike.
            #"[{"id": true, "name": "a boolean key"}]"#, #"[{"id": 1, "small": true}]"#, #"[{"id": 1, "amount": false}]"#
        ] {
            let payload = try JSONPayload(bad)
            await expectActionError(.invalidValue) {
                try await runMerge(connect, MergeNumberItem.self) { try $0.merge(objects: payload.objects, for: MergeNumberItem.self) }
            }
        }
        #expect(try await stored(connect) == expected)
    }

    /// Decimal keys match numerically (1.5 and 1.50, a JSON number and a `Decimal`), as the
    /// store's decimal columns compare them.
    @Test func decimalKeysMatchNumerically() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeConnect(dir)
        let first: [[String: any Sendable]] = [["code": Decimal(string: "1.50")!, "label": "a"], ["code": Decimal(2), "label": "b"]]
        try await runMerge(connect, MergeDecimalKeyed.self) { try $0.merge(objects: first, for: MergeDecimalKeyed.self) }
        let payload = try JSONPayload(#"[{"code": 1.5, "label": "c"}, {"code": 2, "label": "b"}]"#)
        let summary = try await runMerge(connect, MergeDecimalKeyed.self) {
            try $0.merge(objects: payload.objects, for: MergeDecimalKeyed.self)
        }
        #expect(summary == MergeSummary(inserted: 0, updated: 1, deleted: 0, saved: true))
        let context = connect.newBackgroundContext()
        let rows = try await context.perform {
            try context.fetch(FetchRequest<MergeDecimalKeyed>(sortBy: [SortDescriptor(\.code)])).map { "\($0.code) \($0.label)" }
        }
        #expect(rows == ["1.5 c", "2 b"])
    }
}
