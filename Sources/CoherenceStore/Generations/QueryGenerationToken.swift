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
/// a context holds it; see the Query generations guide. A token of PostgreSQL stores also
/// carries their exported snapshots: it can be encoded (`Codable`) and given to another
/// coordinator of the same stores, in this process or another, whose contexts then read the same
/// snapshot while a context of the first coordinator holds it.
public struct QueryGenerationToken: Sendable, Equatable, Codable, CustomStringConvertible {
    enum Kind: Sendable, Equatable, Codable {
        case current
        /// Generation `number` of the coordinator whose generations' identifier is `coordinator`.
        case snapshot(coordinator: UUID, number: UInt64)
    }
    let kind: Kind
    /// The exported snapshots of the generation's stores, by store identifier (PostgreSQL
    /// stores' ``ExportedStoreSnapshot``s), which another coordinator can import.
    package let exportedSnapshots: [UUID: String]

    init(_ kind: Kind, exportedSnapshots: [UUID: String] = [:]) {
        self.kind = kind
        self.exportedSnapshots = exportedSnapshots
    }

    /// Whether both name the same snapshot.
    public static func == (lhs: QueryGenerationToken, rhs: QueryGenerationToken) -> Bool { lhs.kind == rhs.kind }

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
