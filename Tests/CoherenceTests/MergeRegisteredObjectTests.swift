import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceSQLite
@testable import CoherenceStore

@Suite("Merge: registered objects", .timeLimit(.minutes(5)))
struct MergeRegisteredObjectTests {
    /// Objects the action context loaded before another context saved new values: the merge
    /// compares the incoming values with the rows, so an incoming value equal to the object's
    /// old one is still written (the store ends with the incoming values), and an unchanged
    /// row is still left alone.
    @Test func objectsLoadedBeforeAnotherSaveTakeTheIncomingValues() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await runMerge(connect, ActProduct.self) {
            try $0.merge(objects: [product("a", "T"), product("b", "T"), product("c", "T")], for: ActProduct.self)
        }
        let other = connect.newBackgroundContext()
        let summary = try await runMerge(connect, ActProduct.self) { context in
            let loaded = try context.performAndWait { try context.fetch(FetchRequest<ActProduct>()).map(\.title) }
            #expect(loaded == ["T", "T", "T"])
            try other.performAndWait {
                for p in try other.fetch(FetchRequest<ActProduct>()) where p.sku != "c" { p.title = "X" }
                try other.save()
            }
            return try context.merge(objects: [product("a", "T"), product("b", "B"), product("c", "T")], for: ActProduct.self)
        }
        #expect(summary == MergeSummary(inserted: 0, updated: 2, deleted: 0, saved: true))
        #expect(try await storedProducts(connect).map(\.title) == ["T", "B", "T"])
    }
}

extension MergeRegisteredObjectTests {
    /// The same when the action context has unsaved changes of the entity (the merge then reads
    /// through its objects): the unchanged, outdated object takes its row's values; the changed
    /// one keeps its change.
    @Test func withUnsavedChangesOutdatedObjectsTakeTheIncomingValues() async throws {
        let dir = try TemporaryDirectory()
        let connect = try makeBehaviourConnect(dir)
        try connect.start()
        try await runMerge(connect, ActProduct.self) { try $0.merge(objects: [product("a", "T"), product("b", "T")], for: ActProduct.self) }
        let other = connect.newBackgroundContext()
        let summary = try await runMerge(connect, ActProduct.self) { context in
            try context.performAndWait {
                for p in try context.fetch(FetchRequest<ActProduct>()) where p.sku == "b" { p.title = "local" }
            }
            try other.performAndWait {
                for p in try other.fetch(FetchRequest<ActProduct>()) { p.title = "X" }
                try other.save()
            }
            return try context.merge(objects: [product("a", "T"), product("b", "local")], for: ActProduct.self)
        }
        #expect(summary == MergeSummary(inserted: 0, updated: 1, deleted: 0, saved: true))
        #expect(try await storedProducts(connect).map(\.title) == ["T", "local"])
    }
}
