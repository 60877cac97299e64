import Coherence
import Foundation

// Query generations: a list pinned to a snapshot keeps showing a note that a background
// context deletes, until the list moves on.

final class Folder: ManagedObject {
    @Attribute var name: String = ""
    @Relationship(inverse: "folder", deleteRule: .cascade) var notes: Set<Note>
}

final class Note: ManagedObject {
    @Attribute var title: String = ""
    @Relationship(inverse: "notes") var folder: Folder?
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("coherence-generations-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(types: [Folder.self, Note.self]))
try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("Notes.sqlite"))

let background = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "background")
try background.performAndWait {
    let inbox = Folder(context: background)
    inbox.name = "Inbox"
    for title in ["Groceries", "Call Ada", "Book flights"] {
        let note = Note(context: background)
        note.title = title
        note.folder = inbox
    }
    try background.save()
}

// 1. The list: pinned to the store as it is at its first read.
let list = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: coordinator, name: "list")
let rows: [ObjectID] = try list.performAndWait {
    try list.setQueryGeneration(from: .current)
    let notes = try list.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)]))
    for note in notes { list.refresh(note, mergeChanges: false) }  // as if memory ran low: read again when shown
    return notes.map(\.objectID)
}
print("The list shows \(rows.count) notes")

// 2. A background import deletes the first row and renames the folder.
try background.performAndWait {
    background.delete(background.object(with: rows[0]))
    for folder in try background.fetch(FetchRequest<Folder>()) { folder.name = "Archive" }
    try background.save()
}
print("The background context deleted a note and renamed the folder")

// 3. The user taps the deleted row: the pinned list still reads it, folder included.
try list.performAndWait {
    let note = try list.existingObject(with: rows[0]) as? Note
    print(
        "Tapped: \(note?.title ?? "nothing") in \(note?.folder?.name ?? "no folder") (still \(try list.count(for: FetchRequest<Note>())) notes)"
    )
}

// 4. Moving on (here by resetting; saving or merging does it too) shows the store as it is now.
try list.performAndWait {
    list.reset()
    let titles = try list.fetch(FetchRequest<Note>(sortBy: [SortDescriptor(\.title)])).map(\.title)
    print("After moving on: \(titles.joined(separator: ", "))")
    print("The deleted note is gone: \((try? list.existingObject(with: rows[0])) == nil)")
}
