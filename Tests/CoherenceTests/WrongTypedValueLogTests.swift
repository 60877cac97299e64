import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

final class MistypedGauge: ManagedObject {
    @Attribute var level: Int = 7
    @Attribute var label: String = ""
    override class var entityName: String { "MistypedGauge" }
}

/// Collects the messages that name a marker.
final class CollectingLogger: CoherenceLogger {
    let marker: String
    let messages = LockedValue<[LogMessage]>([])
    init(marker: String) { self.marker = marker }
    var level: LogLevel { .debug }
    func log(_ message: LogMessage) {
        if message.text.contains(marker) { messages.withLock { $0.append(message) } }
    }
}

/// A value of another type that another program wrote into a column: the typed property reads
/// the attribute's default (an accessor cannot throw) and says so in the log, once per attribute;
/// `value(forKey:as:)` throws `.typeMismatch`.
@Suite("Objects: wrong-typed stored values")
struct WrongTypedValueLogTests {
    @Test func aTypedReadOfTextInAnIntegerColumnIsLogged() throws {
        let dir = try TemporaryDirectory()
        let url = dir.file("gauges.sqlite")
        let model = try ManagedObjectModel(types: [MistypedGauge.self])
        do {
            let c = PersistentStoreCoordinator(managedObjectModel: model)
            let store = try c.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
            try context.performAndWait {
                for i in 0..<3 {
                    let g = MistypedGauge(context: context)
                    g.level = i
                    g.label = "g\(i)"
                }
                try context.save()
            }
            try c.remove(store)
        }
        // Another program writes text into the integer column of two rows.
        let raw = try SQLiteConnection(location: .file(url.path), switchesToWAL: false)
        try raw.execute(#"UPDATE "MistypedGauge" SET "level" = 'high' WHERE "label" != 'g0'"#)

        let recorder = CollectingLogger(marker: "'MistypedGauge.level'")
        let previous = CoherenceLogging.logger
        CoherenceLogging.logger = recorder
        defer { CoherenceLogging.logger = previous }

        let c = PersistentStoreCoordinator(managedObjectModel: model)
        try c.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: c)
        try context.performAndWait {
            let gauges = try context.fetch(FetchRequest<MistypedGauge>(sortBy: [SortDescriptor(\.label)]))
            #expect(gauges.map(\.level) == [0, 7, 7])
            #expect(gauges.map(\.level) == [0, 7, 7])  // read again: logged once
            let error = #expect(throws: CoherenceError.self) { try gauges[1].value(forKey: "level", as: Int.self) }
            #expect(error?.code == .typeMismatch)
        }
        let messages = recorder.messages.withLock { $0 }
        #expect(messages.count == 1)
        #expect(messages.first?.level == .error)
        #expect(messages.first?.text.contains("holds text") == true)
    }
}
