import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// What a history kit merges of another author's relationship changes: the other side of a
/// to-many relationship kept in the destination's row.
@Suite("History kit: relationships of other authors", .serialized, .timeLimit(.minutes(2)))
struct HistoryKitRelationshipTests {
    func stack(_ dir: TemporaryDirectory, _ author: String) throws -> GenericConnect<ContextStrategy.Direct> {
        let connect = GenericConnect<ContextStrategy.Direct>(name: "Towns", managedObjectModel: try makeTestModel())
        try connect.attachPersistentStore(at: dir.url, for: StoreConfiguration(fileName: "towns.sqlite", options: kitStoreOptions))
        connect.viewContext.transactionAuthor = author
        return connect
    }

    /// Another author moves a person into a town: the app's view context, whose town had its
    /// people read, shows the new person among them once its kit merged.
    @Test func aToManyChangedByAnotherAuthorIsMerged() async throws {
        let dir = try TemporaryDirectory()
        let app = try stack(dir, "app")
        let widget = try stack(dir, "widget")
        let writer = widget.newBackgroundContext()
        writer.transactionAuthor = "widget"
        try writer.performAndWait {
            Town(context: writer).name = "Oslo"
            try writer.save()
        }
        let kit = PersistentHistoryTrackingKit(
            container: app, currentAuthor: "app", allAuthors: ["app", "widget"], cleanStrategy: .none, logLevel: 0)
        defer { kit.stop() }
        await kit.mergePendingHistory()
        let view = app.viewContext
        let before = try await view.perform { () -> [String] in
            let town = try #require(try view.fetch(FetchRequest<Town>()).first)
            return town.people.map(\.name)
        }
        #expect(before == [])
        try writer.performAndWait {
            let town = try #require(try writer.fetch(FetchRequest<Town>()).first)
            let ada = Person(context: writer)
            ada.name = "Ada"
            ada.town = town
            try writer.save()
        }
        // (After any round the remote change started.)
        await kit.mergePendingHistory()
        let after = try await view.perform { () -> [String] in
            let town = try #require(view.registeredObjects.compactMap { $0 as? Town }.first)
            return town.people.map(\.name)
        }
        #expect(after == ["Ada"])
    }
}
