import Coherence
import CoherenceExampleSupport
import Foundation

// Start-up scenario 4: a global store first (the shared catalog), then the user's stores once
// someone logs in. Attaching works before and after start().

let location = try exampleLocation("global-then-user")
defer { cleanUp(location) }

let connect = GenericConnect<ContextStrategy.Mixed>(name: "Shop", managedObjectModel: try makeExampleModel())
try connect.attachPersistentStore(at: location, for: StoreConfiguration(name: "GlobalData"))
try connect.start()
try await addProducts([("A-1", "Lamp", "19.99"), ("B-2", "Desk", "120")], using: connect)
print("Global store ready with the catalog")

let alice = try connect.attachPersistentStore(
    at: StoreLocation.location(forUser: "alice", under: location),
    for: StoreConfiguration(name: "UserData"))
print("alice logged in: \(alice.url?.lastPathComponent ?? "")")
let view = connect.viewContext
let summary: String = try await view.perform {
    let note = Note(context: view)
    note.text = "Buy the lamp"
    try view.save()
    let products = try view.count(for: FetchRequest<Product>())
    return "\(products) products in the catalog, 1 note for alice"
}
print(summary)
print("Files: \(listFiles(location))")
try connect.stop()
