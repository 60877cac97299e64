import Coherence
import CoherenceExampleSupport
import Foundation

// Start-up scenario 1: no configuration. start() attaches one default store,
// <location>/<container name>.sqlite, holding every entity.

let location = try exampleLocation("default")
defer { cleanUp(location) }

let connect = GenericConnect<ContextStrategy.Mixed>(name: "Shop", managedObjectModel: try makeExampleModel())
connect.storeLocation = location  // instead of GenericConnect.defaultStoreLocation()
try connect.start()
print("Started; stores: \(connect.persistentStoreCoordinator.persistentStores.map { $0.url?.lastPathComponent ?? "memory" })")

try await addProducts([("A-1", "Lamp", "19.99"), ("B-2", "Desk", "120")], using: connect)
let count: Int = try await connect.viewContext.perform { try connect.viewContext.count(for: FetchRequest<Product>()) }
print("Products: \(count)")
try connect.stop()
print("Stopped; files: \(listFiles(location))")
