import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A history kit running while its container logs one user out (detaches the user's store) and
/// another in: it merges the new user's other authors, never the old user's, and stopping the
/// kit and releasing the container afterwards neither hangs nor crashes.
@Suite("History kit: logging users out and in", .timeLimit(.minutes(2)))
struct HistoryKitUserSwitchTests {
    @Test func aRunningKitFollowsTheStoreOfTheUserLoggedIn() async throws {
        let dir = try TemporaryDirectory()
        let bobDir = try TemporaryDirectory()
        let app = try KitStack(dir, author: "app")
        let aliceWidget = try KitStack(dir, author: "widget")
        let kit = app.kit()
        let rounds = RoundReader(kit.engine)
        let view = app.view
        func shown() async throws -> [String] {
            try await view.perform { try view.fetch(FetchRequest<RemoteNote>()).map(\.text).sorted() }
        }
        try aliceWidget.insert(1)
        #expect(try await rounds.until { try await shown() == ["widget 1"] })
        // Alice logs out, bob logs in.
        try app.connect.detach(persistentStore: app.store)
        try app.connect.attachPersistentStore(at: bobDir.url, for: app.configuration)
        #expect(try await shown() == [])
        let bobWidget = try KitStack(bobDir, author: "widget")
        try bobWidget.insert(7)
        try aliceWidget.insert(2)
        #expect(try await rounds.until { try await shown() == ["widget 7"] })
        #expect(try await shown() == ["widget 7"])
        kit.stop()
        // Alice's file holds only her widget's notes; bob's only his.
        let aliceTexts = try aliceWidget.view.performAndWait {
            try aliceWidget.view.fetch(FetchRequest<RemoteNote>()).map(\.text).sorted()
        }
        #expect(aliceTexts == ["widget 1", "widget 2"])
        let bobTexts = try bobWidget.view.performAndWait { try bobWidget.view.fetch(FetchRequest<RemoteNote>()).map(\.text).sorted() }
        #expect(bobTexts == ["widget 7"])
    }
}
