import Foundation

/// A snapshot of a coordinator's stores that contexts read, as Core Data's
/// `NSQueryGenerationToken`.
///
/// ``current`` asks for the snapshot current at a context's next read; a context's
/// ``ManagedObjectContext/queryGenerationToken`` names the snapshot it reads, and another context
/// given that token reads the same snapshot. Tokens are compared by the snapshot they name.
///
/// ```swift
/// try viewContext.setQueryGeneration(from: .current)
/// let notes = try viewContext.fetch(FetchRequest<Note>())  // pins the snapshot
/// try detailContext.setQueryGeneration(from: viewContext.queryGenerationToken)
/// ```
///
/// A token belongs to the coordinator whose contexts made it, and names a snapshot only while
/// a context holds it; see the Query generations guide.
public struct QueryGenerationToken: Sendable, Equatable, CustomStringConvertible {
    enum Kind: Sendable, Equatable {
        case current
        /// Generation `number` of the coordinator whose generations' identifier is `coordinator`.
        case snapshot(coordinator: UUID, number: UInt64)
    }
    let kind: Kind

    init(_ kind: Kind) { self.kind = kind }

    /// The snapshot current at a context's next read (Core Data's
    /// `NSQueryGenerationToken.current`).
    public static let current = QueryGenerationToken(.current)

    /// `current`, or the generation's number.
    public var description: String {
        switch kind {
        case .current: return "<QueryGenerationToken current>"
        case .snapshot(_, let number): return "<QueryGenerationToken \(number)>"
        }
    }
}
