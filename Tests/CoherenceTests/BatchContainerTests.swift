import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// Batch requests on a store attached to a `GenericConnect` container (a schema of its own on
/// PostgreSQL), and query generations across them.
@Suite("Batch requests: containers and query generations")
struct BatchContainerTests {
    /// Runs `body` (a batch request) in a new background context of `stack`'s container, as `author`.
    static func execute<T>(_ stack: KitStack, as author: String, _ body: (ManagedObjectContext) throws -> T) throws -> T {
        let context = stack.connect.newBackgroundContext()
        context.transactionAuthor = author
        return try context.performAndWait { try body(context) }
    }

    /// A context pinned to a query generation (and one sharing its token) reads the store as it
    /// was, across another container's batch insert and delete, until it moves to the current one.
    @Test(arguments: storedTypes)
    func pinnedGenerationsDoNotSeeBatchRequests(_ type: StoreType) throws {
        let (app, widget) = try kitPair(type)
        try app.insert(1)
        try app.insert(2)
        let a = app.connect.newBackgroundContext(), b = app.connect.newBackgroundContext()
        let token = try a.performAndWait { () throws -> QueryGenerationToken? in
            try a.setQueryGeneration(from: .current)
            #expect(try a.count(for: FetchRequest<RemoteNote>()) == 2)
            return a.queryGenerationToken
        }
        try b.performAndWait { try b.setQueryGeneration(from: token) }
        let insert = BatchInsertRequest<RemoteNote>(objects: (1...5).map { ["author": "widget", "sequence": $0, "text": "w"] })
        _ = try Self.execute(widget, as: "widget") { try $0.execute(insert) }
        let delete = BatchDeleteRequest<RemoteNote>(fetchRequest: FetchRequest(predicate: #Predicate { $0.sequence == 1 }))
        _ = try Self.execute(widget, as: "widget") { try $0.execute(delete) }
        for context in [a, b] {
            try context.performAndWait {
                #expect(try context.count(for: FetchRequest<RemoteNote>()) == 2)
                #expect(try context.fetch(FetchRequest<RemoteNote>()).map(\.sequence).sorted() == [1, 2])
                try context.setQueryGeneration(from: .current)
                #expect(try context.count(for: FetchRequest<RemoteNote>()) == 5)
            }
        }
    }
}
