import Coherence
import CoherenceExampleSupport
import Foundation

// Start-up scenario 2: custom configurations. Each configuration of the model gets its own
// store: here the catalog on disk and the notes in memory.

let location = try exampleLocation("configurations")
defer { cleanUp(location) }

let connect: Connect = GenericConnect<ContextStrategy.Mixed>(name: "Shop", managedObjectModel: try makeExampleModel())
try connect.attachPersistentStores(
    at: location,
    for: [
        StoreConfiguration(name: "UserData", type: .inMemory),
        StoreConfiguration(name: "GlobalData", type: .sqlite)
    ])
try connect.start()
for store in connect.persistentStoreCoordinator.persistentStores {
    print("\(store.configurationName ?? "Default"): \(store.type) \(store.url?.lastPathComponent ?? "")")
}
try await addProducts([("A-1", "Lamp", "19.99")], using: connect)
print("Files: \(listFiles(location))")
try connect.stop()
