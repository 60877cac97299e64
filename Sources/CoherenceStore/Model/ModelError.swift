/// An error in a managed object model, found when the model is loaded.
///
/// Says which entity and property are at fault:
///
/// ```swift
/// do { _ = try ManagedObjectModel(entities: [person]) }
/// catch let error as ModelError {
///     print(error.code, error.entityName ?? "-", error.propertyName ?? "-")
/// }
/// ```
public struct ModelError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What kind of problem it is. A struct over a private enum: new codes never break clients.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Hashable, Sendable {
            case duplicateEntity, duplicateProperty, unknownSuperentity, inheritanceCycle
            case unknownDestination, unknownInverse, inverseMismatch
            case unknownConstraintAttribute, unknownIndexProperty
            case unknownConfigurationEntity, crossConfigurationRelationship
            case invalidDefaultValue, invalidName, entityInAnotherModel, invalidValidationRule
            case classMismatch, modelNotFound, modelParse
        }
        private let kind: Kind
        /// Two entities share a name.
        public static let duplicateEntity = Code(kind: .duplicateEntity)
        /// Two properties of an entity (own or inherited) share a name.
        public static let duplicateProperty = Code(kind: .duplicateProperty)
        /// An entity names a superentity that is not in the model.
        public static let unknownSuperentity = Code(kind: .unknownSuperentity)
        /// Superentities form a cycle.
        public static let inheritanceCycle = Code(kind: .inheritanceCycle)
        /// A relationship names a destination entity that is not in the model.
        public static let unknownDestination = Code(kind: .unknownDestination)
        /// A relationship names an inverse that the destination does not have.
        public static let unknownInverse = Code(kind: .unknownInverse)
        /// A relationship and its inverse do not point at each other.
        public static let inverseMismatch = Code(kind: .inverseMismatch)
        /// A uniqueness constraint names an attribute the entity does not have.
        public static let unknownConstraintAttribute = Code(kind: .unknownConstraintAttribute)
        /// An index names a property the entity does not have.
        public static let unknownIndexProperty = Code(kind: .unknownIndexProperty)
        /// A configuration names an entity that is not in the model.
        public static let unknownConfigurationEntity = Code(kind: .unknownConfigurationEntity)
        /// No longer reported: a model whose configurations split related entities loads, as in
        /// Core Data; relating objects that live in two stores fails at save with
        /// `CoherenceError.crossStoreRelationship`.
        @available(
            *, deprecated,
            message: "Models whose configurations split related entities load; saves report CoherenceError.crossStoreRelationship."
        )
        public static let crossConfigurationRelationship = Code(kind: .crossConfigurationRelationship)
        /// A default value is not of the attribute's type.
        public static let invalidDefaultValue = Code(kind: .invalidDefaultValue)
        /// A name is empty or uses a reserved name.
        public static let invalidName = Code(kind: .invalidName)
        /// An entity description was already used by another model.
        public static let entityInAnotherModel = Code(kind: .entityInAnotherModel)
        /// A validation rule does not fit the attribute (for example an invalid regular expression).
        public static let invalidValidationRule = Code(kind: .invalidValidationRule)
        /// A typed class does not match its entity.
        public static let classMismatch = Code(kind: .classMismatch)
        /// No model file with that name was found.
        public static let modelNotFound = Code(kind: .modelNotFound)
        /// A model file could not be parsed.
        public static let modelParse = Code(kind: .modelParse)
        /// The code's name, for example `duplicateEntity`.
        public var description: String { kind.rawValue }
    }

    /// What kind of problem it is.
    public let code: Code
    /// The entity at fault, if any.
    public let entityName: String?
    /// The property at fault, if any.
    public let propertyName: String?
    /// A readable explanation.
    public let message: String

    /// Creates a model error.
    public init(_ code: Code, entity: String? = nil, property: String? = nil, _ message: String) {
        self.code = code
        self.entityName = entity
        self.propertyName = property
        self.message = message
    }

    /// The code, the entity and property at fault when known, and the message.
    public var description: String {
        var where_ = ""
        if let entityName { where_ = " (entity '\(entityName)'" + (propertyName.map { ", property '\($0)'" } ?? "") + ")" }
        return "Model error [\(code)]\(where_): \(message)"
    }
}
