import Coherence
import Foundation

/// A product in the shared catalog (global store, configuration "GlobalData").
public final class Product: ManagedObject {
    @Attribute(.unique) public var sku: String = ""
    @Attribute public var name: String = ""
    @Attribute public var price: Decimal = 0
}

/// A note a user wrote (per-user store, configuration "UserData").
public final class Note: ManagedObject {
    @Attribute public var text: String = ""
    @Attribute public var created: Date = Date(timeIntervalSinceReferenceDate: 0)
}

/// The examples' model: a global catalog and per-user notes, in two configurations.
public func makeExampleModel() throws -> ManagedObjectModel {
    try ManagedObjectModel(
        types: [Product.self, Note.self],
        configurations: ["GlobalData": ["Product"], "UserData": ["Note"]])
}

/// A fresh directory for an example's stores (removed by `cleanUp`).
public func exampleLocation(_ name: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-\(name)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Removes an example's directory.
public func cleanUp(_ url: URL) { try? FileManager.default.removeItem(at: url) }

/// Lists the files below `url`, relative to it.
public func listFiles(_ url: URL) -> [String] {
    let items = FileManager.default.enumerator(atPath: url.path)?.compactMap { $0 as? String } ?? []
    return items.filter { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }.sorted()
}

/// Adds products in a background context and saves. Prices are decimal text ("19.99"): a Swift
/// floating-point literal would pass through `Double` and lose exactness.
public func addProducts(_ items: [(String, String, String)], using connect: some PersistentStack) async throws {
    let background = connect.newBackgroundContext()
    try await background.perform {
        for (sku, name, price) in items {
            let p = Product(context: background)
            p.sku = sku
            p.name = name
            p.price = Decimal(string: price, locale: Locale(identifier: "en_US_POSIX")) ?? 0
        }
        try background.save()
    }
}

/// An example's own check failed: it exits non-zero with this message.
public struct ExampleFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
