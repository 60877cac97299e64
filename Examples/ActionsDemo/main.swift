import Coherence
import CoherenceExampleSupport
import Foundation
import Synchronization

// Actions: an EntityAction fetches a JSON product list from a "web service" (a file the example
// writes, standing in for an HTTP endpoint), merges it into the catalog, and the example watches
// the proxies and prints their statistics.

/// The "web service": serves the current catalog as JSON.
final class CatalogService: Sendable {
    let url: URL
    init(url: URL) { self.url = url }
    func publish(_ items: [[String: any Sendable]]) throws {
        try JSONSerialization.data(withJSONObject: items, options: [.sortedKeys]).write(to: url)
    }
    func fetchProducts() throws -> [[String: Any]] {
        let data = try Data(contentsOf: url)
        return (try JSONSerialization.jsonObject(with: data) as? [[String: Any]]) ?? []
    }
}

/// Keeps the local catalog in step with the service: one fetch, one merge by `sku`.
final class SyncCatalog: EntityAction {
    typealias ManagedObjectType = Product
    let service: CatalogService
    init(service: CatalogService) { self.service = service }
    func execute(context: ActionContext) throws {
        let items = try service.fetchProducts()
        let summary = try context.merge(objects: items, for: Product.self)
        print("   merge: \(summary)")
    }
}

/// A slow generic task that stops when cancelled.
final class SlowReport: GenericAction {
    let cancelled = Mutex(false)
    let started = DispatchSemaphore(value: 0)
    func execute() throws {
        started.signal()
        for _ in 0..<1_000 where !cancelled.withLock({ $0 }) { usleep(1_000) }
    }
    func cancel() { cancelled.withLock { $0 = true } }
}

let location = try exampleLocation("actions")
defer { cleanUp(location) }
let service = CatalogService(url: location.appendingPathComponent("catalog.json"))

// Product is managed: its `sku` attribute is unique, so it gets its own serial action queue.
let connect = GenericConnect<ContextStrategy.Mixed>(name: "Shop", managedObjectModel: try makeExampleModel())
try connect.attachPersistentStore(at: location, for: StoreConfiguration(name: "GlobalData"))
try connect.start()
print("Managed entities: \(connect.managedEntities)")

// Watch every action start and finish.
let watcher = Task {
    for await event in connect.actionEvents {
        print(
            "   [\(event.kind == .didStartExecuting ? "start " : "finish")] \(type(of: event.proxy.action)) → \(event.proxy.completionStatus)"
        )
    }
}

// 1. First sync: three products.
try service.publish([
    ["sku": "A-1", "name": "Desk lamp", "price": 19.99],
    ["sku": "B-2", "name": "Oak desk", "price": 249],
    ["sku": "C-3", "name": "Chair", "price": 89.5]
])
print("1. Sync from the service")
let first = try connect.execute(SyncCatalog(service: service)) { proxy in
    print("   done: \(proxy.state), \(proxy.completionStatus)")
}
try await first.value
print("   statistics: \(first.statistics)")

// 2. The service changed: one price update, one new product, one removed.
try service.publish([
    ["sku": "A-1", "name": "Desk lamp", "price": 17.5],
    ["sku": "B-2", "name": "Oak desk", "price": 249],
    ["sku": "D-4", "name": "Shelf", "price": 59]
])
print("2. Sync again")
let second = try connect.execute(SyncCatalog(service: service))
try await second.value
print("   statistics: \(second.statistics)")

// 3. The view context saw it (Mixed strategy: background saves are merged).
let names: [String] = try await connect.viewContext.perform {
    try connect.viewContext.fetch(FetchRequest<Product>(sortBy: [SortDescriptor(\.sku)])).map { "\($0.sku) \($0.name) \($0.price)" }
}
print("3. View context: \(names.joined(separator: "; "))")

// 4. Cancelling a running generic action.
let report = SlowReport()
let proxy = try connect.execute(report)
report.started.wait()
proxy.cancel()
await proxy.finished
print("4. Cancelled a running report: \(proxy.completionStatus) after \(String(format: "%.0f", proxy.statistics.executionTime * 1000)) ms")

// 5. An entity that is not managed is refused at once.
final class WriteNote: EntityAction {
    typealias ManagedObjectType = Note
    func execute(context: ActionContext) throws {}
}
do {
    _ = try connect.execute(WriteNote())
} catch {
    print("5. Refused: \(error)")
}

try connect.stop()
watcher.cancel()
print("Stopped.")
