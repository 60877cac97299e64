import Foundation

/// An ``ObjectID`` that knows the class of its object: `Sendable` and `Hashable` as an ID, and
/// `Codable` as its URI (RCDataKit's `TypedObjectID`).
///
/// ```swift
/// let id = TypedObjectID(person)                               // TypedObjectID<Person>
/// let again: Person = try otherContext.existingObject(with: id)
/// ```
///
/// Decoding needs the coordinator that resolves the URI: put it in the decoder's `userInfo`
/// under `CodingUserInfoKey.coherenceCoordinator`.
public struct TypedObjectID<T: ManagedObject>: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The object's ID.
    public let objectID: ObjectID

    /// The ID of `object` (a temporary ID until the object is saved, as ``ManagedObject/objectID``).
    public init(_ object: T) {
        objectID = object.objectID
    }

    /// `objectID` as the ID of a `T`.
    /// - Throws: `.typeMismatch` naming the ID's entity when its objects are not `T`s.
    public init(_ objectID: ObjectID) throws(CoherenceError) {
        guard objectID.entity.managedObjectClass is T.Type else {
            throw CoherenceError(
                .typeMismatch, "\(objectID) is an ID of entity '\(objectID.entity.name)', whose objects are not \(T.self).",
                entity: objectID.entity.name, objectID: objectID)
        }
        self.objectID = objectID
    }

    /// An ID known to be of a `T` (fetched for a request of `T`).
    init(unchecked objectID: ObjectID) { self.objectID = objectID }

    /// The ID a URI names in `coordinator` (see ``ObjectID/uriRepresentation()``).
    /// - Throws: `.invalidURI` when the URI names no object of an attached store;
    ///   `.typeMismatch` when it names an object that is not a `T`.
    public init(uriRepresentation uri: URL, coordinator: PersistentStoreCoordinator) throws(CoherenceError) {
        guard let id = coordinator.managedObjectID(forURIRepresentation: uri) else {
            throw CoherenceError(.invalidURI, "\(uri) is not the URI of an object of an attached store.")
        }
        try self.init(id)
    }

    /// The object's URI: `x-coredata://<store UUID>/<Entity>/p<key>`.
    public func uriRepresentation() -> URL { objectID.uriRepresentation() }

    /// The ID, for example `Person(42)`.
    public var description: String { objectID.description }

    /// Encodes the URI, as a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uriRepresentation().absoluteString)
    }

    /// Decodes a URI and resolves it in the coordinator found in the decoder's `userInfo`
    /// under `CodingUserInfoKey.coherenceCoordinator`.
    /// - Throws: `DecodingError.dataCorrupted` when there is no coordinator, the text is not a
    ///   URI of one of its objects, or the object is not a `T`.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let key = CodingUserInfoKey.coherenceCoordinator,
            let coordinator = decoder.userInfo[key] as? PersistentStoreCoordinator
        else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "Decoding a TypedObjectID needs the coordinator in userInfo[.coherenceCoordinator]."))
        }
        guard let uri = URL(string: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not a URI."))
        }
        do {
            try self.init(uriRepresentation: uri, coordinator: coordinator)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.description, underlyingError: error))
        }
    }
}

extension CodingUserInfoKey {
    /// The key under which a decoder's `userInfo` holds the ``PersistentStoreCoordinator`` that
    /// resolves decoded ``TypedObjectID``s.
    ///
    /// ```swift
    /// let decoder = JSONDecoder()
    /// if let key = CodingUserInfoKey.coherenceCoordinator { decoder.userInfo[key] = coordinator }
    /// ```
    public static let coherenceCoordinator = CodingUserInfoKey(rawValue: "coherence.coordinator")
}
