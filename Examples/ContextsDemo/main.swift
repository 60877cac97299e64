import Coherence
import Foundation

// Contexts in action: insert on the main context, fetch with #Predicate, edit the same objects
// in a background context, and watch the main context pick up the change.

final class Town: ManagedObject {
    @Attribute(.unique) var name: String = ""
    @Relationship(inverse: "town", deleteRule: .cascade) var people: Set<Person>
}

final class Person: ManagedObject {
    @Attribute var name: String = ""
    @Attribute var age: Int = 0
    @Relationship(inverse: "people") var town: Town?
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-contexts-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

let model = try ManagedObjectModel(types: [Town.self, Person.self])
let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("Contexts.sqlite"))

// The main-queue context shows data; it merges background saves automatically.
let main = ManagedObjectContext(concurrencyType: .mainQueue, coordinator: coordinator, name: "main")
main.automaticallyMergesChangesFromParent = true

// 1. Insert on the main context and save.
let adaID: ObjectID? = try await main.perform {
    let oslo = Town(context: main)
    oslo.name = "Oslo"
    for (name, age) in [("Ada", 36), ("Bob", 17), ("Cyd", 52)] {
        let p = Person(context: main)
        p.name = name
        p.age = age
        p.town = oslo
    }
    try main.save()
    let ada = try main.fetch(FetchRequest<Person>(predicate: #Predicate { $0.name == "Ada" })).first
    return ada?.objectID
}
print("Saved 3 people in Oslo")

// 2. Fetch with #Predicate.
let adults: [String] = try await main.perform {
    try main.fetch(FetchRequest<Person>(predicate: #Predicate { $0.age >= 18 }, sortBy: [SortDescriptor(\.name)]))
        .map { "\($0.name) (\($0.age))" }
}
print("Adults: \(adults.joined(separator: ", "))")

// 3. Edit in a background context; wait for the main context's change event.
let changes = main.events
let background = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "background")
guard let adaID else {
    print("Ada was not saved")
    exit(1)
}
try await background.perform {
    guard let ada = try background.existingObject(with: adaID) as? Person else { return }
    ada.age += 1
    try background.save()
}
print("Background context saved Ada's birthday")

for await event in changes where event.kind == .objectsDidChange && event.updated.contains(adaID) {
    print("Main context merged the save: \(event.updated.count) updated object(s)")
    break
}
let age: Int = await main.perform { (main.registeredObject(for: adaID) as? Person)?.age ?? -1 }
print("Main context now sees Ada aged \(age)")
