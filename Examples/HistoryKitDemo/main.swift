import Coherence
import Foundation

// HistoryKitDemo: an app and its extension, two processes writing one store, each under its own
// transaction author. Each runs a PersistentHistoryTrackingKit, which merges the other's saves
// into its view context and trims the history once both have merged it.
//
//   swift run HistoryKitDemo                 the app (starts the extension itself)
//   HistoryKitDemo --extension <store>       the extension (started by the app)

final class Note: ManagedObject {
    @Attribute var title: String = ""
}

let options = StoreOptions(persistentHistoryTracking: true, remoteChangeNotificationPost: true)

/// A container on the store at `url`, whose view context writes as `author`.
func openStack(_ url: URL, author: String) throws -> GenericConnect<ContextStrategy.Direct> {
    let connect = GenericConnect<ContextStrategy.Direct>(name: "Notes", managedObjectModel: try ManagedObjectModel(types: [Note.self]))
    try connect.attachPersistentStore(
        at: url.deletingLastPathComponent(), for: StoreConfiguration(fileName: url.lastPathComponent, options: options))
    connect.viewContext.transactionAuthor = author
    return connect
}

/// Saves a change in the view context.
func save(_ connect: GenericConnect<ContextStrategy.Direct>, _ change: @escaping @Sendable (ManagedObjectContext) throws -> Void)
    async throws
{
    let view = connect.viewContext
    try await view.perform {
        try change(view)
        try view.save()
    }
}

/// The titles the view context shows.
func titles(_ connect: GenericConnect<ContextStrategy.Direct>) async throws -> [String] {
    let view = connect.viewContext
    return try await view.perform { try view.fetch(FetchRequest<Note>()).map(\.title).sorted() }
}

/// The numbers of the store's history transactions.
func history(_ connect: GenericConnect<ContextStrategy.Direct>) throws -> [Int64] {
    try connect.persistentStoreCoordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?)).transactions.map(
        \.transactionNumber)
}

/// The next line of `handle`, read off the main thread (the view contexts need it).
func nextLine(_ handle: FileHandle) async -> String? {
    await withCheckedContinuation { continuation in
        Thread {
            var bytes = Data()
            while true {
                let byte = handle.readData(ofLength: 1)
                if byte.isEmpty { return continuation.resume(returning: bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)) }
                if byte.first == UInt8(ascii: "\n") { return continuation.resume(returning: String(decoding: bytes, as: UTF8.self)) }
                bytes.append(byte)
            }
        }.start()
    }
}

/// Writes a line to standard output at once (the app reads it through a pipe).
func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func runExtension(store path: String) async throws {
    let connect = try openStack(URL(fileURLWithPath: path), author: "extension")
    let kit = PersistentHistoryTrackingKit(container: connect, currentAuthor: "extension", allAuthors: ["app", "extension"])
    // Catch up with what the app wrote before the extension started.
    await kit.mergePendingHistory()
    say("  extension: sees \(try await titles(connect))")
    try await save(connect) { Note(context: $0).title = "Call mom" }
    say("  extension: saved 'Call mom'")
    say("SAVED")
    // Wait for the app's word, then merge what it wrote.
    _ = await nextLine(FileHandle.standardInput)
    await kit.mergePendingHistory()
    say("  extension: sees \(try await titles(connect))")
    say("  extension: history holds transactions \(try history(connect)) (both authors merged the first)")
    kit.stop()
    say("DONE")
}

func runApp() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("HistoryKitDemo-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("Notes.sqlite")
    let connect = try openStack(url, author: "app")
    let kit = PersistentHistoryTrackingKit(container: connect, currentAuthor: "app", allAuthors: ["app", "extension"])
    defer { kit.stop() }

    try await save(connect) { Note(context: $0).title = "Buy milk" }
    print("app: saved 'Buy milk'; starting the extension")
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = ["--extension", url.path]
    let input = Pipe(), output = Pipe()
    child.standardInput = input
    child.standardOutput = output
    try child.run()
    func relay(until last: String) async {
        while let line = await nextLine(output.fileHandleForReading) {
            if line == last { return }
            print(line)
        }
    }
    await relay(until: "SAVED")
    // The kit merges the extension's save when it hears of it; make sure it has.
    await kit.mergePendingHistory()
    print("app: sees \(try await titles(connect))")
    try await save(connect) { view in
        for note in try view.fetch(FetchRequest<Note>()) where note.title == "Call mom" { note.title = "Call mom tonight" }
    }
    print("app: renamed 'Call mom' to 'Call mom tonight'")
    input.fileHandleForWriting.write(Data("go\n".utf8))
    await relay(until: "DONE")
    child.waitUntilExit()
    print("app: the extension exited with status \(child.terminationStatus); history holds transactions \(try history(connect))")
}

if let index = CommandLine.arguments.firstIndex(of: "--extension"), index + 1 < CommandLine.arguments.count {
    try await runExtension(store: CommandLine.arguments[index + 1])
} else {
    try await runApp()
}
