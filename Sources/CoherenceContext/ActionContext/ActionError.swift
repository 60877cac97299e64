/// Errors of actions and action contexts.
public struct ActionError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong. A struct over a private enum: new codes never break clients.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: String, Hashable, Sendable { case unmanagedEntity, missingEntityName, invalidValue, notRunning }
        private let kind: Kind
        /// The entity is not managed by the connect (abstract, no uniqueness attributes, or the
        /// connect is not started).
        public static let unmanagedEntity = Code(kind: .unmanagedEntity)
        /// The entity has no name.
        public static let missingEntityName = Code(kind: .missingEntityName)
        /// An incoming value has the wrong type or does not fit its attribute, or an incoming
        /// object lacks a uniqueness attribute.
        public static let invalidValue = Code(kind: .invalidValue)
        /// The connect is stopping or stopped.
        public static let notRunning = Code(kind: .notRunning)
        /// The code's name, for example `unmanagedEntity`.
        public var description: String { kind.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// A readable explanation.
    public let message: String

    /// Creates an action error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `unmanagedEntity("Entity '<name>' not managed by Connect")`.
    public static func unmanagedEntity(_ message: String) -> ActionError { ActionError(.unmanagedEntity, message) }
    /// `missingEntityName("Entity does not have a name, cannot merge objects.")`.
    public static func missingEntityName(_ message: String) -> ActionError { ActionError(.missingEntityName, message) }

    /// The code and the message, for example
    /// `unmanagedEntity("Entity 'Note' not managed, cannot merge objects.")`.
    public var description: String { "\(code)(\"\(message)\")" }
}
