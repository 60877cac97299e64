import Coherence
import CoherenceExampleSupport
import Foundation

// The Coherence quick start: a GenericConnect with the Mixed strategy, a global store shared by
// everyone and a store for the logged-in user. Background work goes straight to disk and the
// view context follows it.

let location = try exampleLocation("quickstart")
defer { cleanUp(location) }

// 1. A connect over a model with two configurations: GlobalData (Product), UserData (Note).
let connect: Connect = GenericConnect<ContextStrategy.Mixed>(name: "Shop", managedObjectModel: try makeExampleModel())
print("1. Created GenericConnect<Mixed> for model: \(connect.managedObjectModel.entities.map(\.name).joined(separator: ", "))")

// 2. The global store first, then start.
let global = try connect.attachPersistentStore(at: location, for: StoreConfiguration(name: "GlobalData"))
try connect.start()
print("2. Attached the global store \(global.url?.lastPathComponent ?? "") and started")

// 3. A user logs in: their store lives in <location>/<user>.
let userLocation = try StoreLocation.location(forUser: "alice", under: location)
let userStore = try connect.attachPersistentStore(at: userLocation, for: StoreConfiguration(name: "UserData"))
print("3. alice logged in: store at <location>/alice/\(userStore.url?.lastPathComponent ?? "")")

// 4. A background context imports the catalog; the view context is told about it.
let view = connect.viewContext
let changes = view.events
try await addProducts([("A-1", "Desk lamp", "19.99"), ("B-2", "Oak desk", "249"), ("C-3", "Chair", "89.5")], using: connect)
for await event in changes where event.kind == .objectsDidChange && !event.inserted.isEmpty {
    print("4. Background import saved; the view context announced \(event.inserted.count) new products")
    break
}

// 5. The view context reads the global store and writes to the user's store.
let report: String = try await view.perform {
    let cheap = try view.fetch(FetchRequest<Product>(predicate: #Predicate { $0.price < 100 }, sortBy: [SortDescriptor(\.price)]))
    let note = Note(context: view)
    note.text = "Compare \(cheap.map(\.name).joined(separator: " and "))"
    note.created = Date()
    try view.save()
    return "under 100: \(cheap.map { "\($0.name) (\($0.price))" }.joined(separator: ", "))"
}
print("5. Fetched with #Predicate — \(report); saved a note for alice")

// 6. Logout at once. The view context's save returned when the note reached the root context,
//    which writes it to alice's file on its own queue; detaching waits for that write.
guard let userFile = userStore.url else { throw ExampleFailure("the user store has no file") }
try connect.detach(persistentStore: userStore)
print("6. alice logged out; stores attached: \(connect.persistentStoreCoordinator.persistentStores.count)")

// 7. Read the note back from alice's file, with a coordinator of its own.
let reader = PersistentStoreCoordinator(managedObjectModel: connect.managedObjectModel)
try reader.addPersistentStore(type: .sqlite, configuration: "UserData", at: userFile)
let readerContext = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: reader)
let notesOnDisk = try readerContext.performAndWait { try readerContext.fetch(FetchRequest<Note>()).map(\.text) }
print("7. On disk after logout, alice's notes: \(notesOnDisk.map { "'\($0)'" }.joined(separator: ", "))")
guard notesOnDisk.count == 1 else { throw ExampleFailure("expected alice's note in her file, found \(notesOnDisk.count)") }

try connect.stop()
print("   Stopped. Files: \(listFiles(location).joined(separator: ", "))")
