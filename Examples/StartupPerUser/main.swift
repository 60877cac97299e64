import Coherence
import CoherenceExampleSupport
import Foundation

// Start-up scenario 3: one store per logged-in user at <location>/<user>. Users come and go
// while the connect runs; a user name that would escape the location is refused.

let location = try exampleLocation("per-user")
defer { cleanUp(location) }

let connect = GenericConnect<ContextStrategy.Mixed>(name: "Shop", managedObjectModel: try makeExampleModel())
for user in ["alice", "bob"] {
    let store = try connect.attachPersistentStore(
        at: StoreLocation.location(forUser: user, under: location),
        for: StoreConfiguration(name: "UserData"))
    if !connect.isStarted { try connect.start() }
    let background = connect.newBackgroundContext()
    try await background.perform {
        let note = Note(context: background)
        note.text = "Hello from \(user)"
        note.created = Date()
        try background.save()
    }
    print("\(user) logged in: \(store.url?.path.replacingOccurrences(of: location.path, with: "<location>") ?? "")")
    try connect.detach(persistentStore: store)
    print("\(user) logged out")
}
do {
    _ = try StoreLocation.location(forUser: "../evil", under: location)
} catch {
    print("Refused: \(error)")
}
print("Files: \(listFiles(location))")
try connect.stop()
