import Foundation

extension PredicateExpressions {
    /// Whether an object — the fetched object, or the destination of a to-one relationship — is
    /// one of some objects, compared by object ID; a nil entry stands for "no object". The
    /// key-path builders make it: `\Student.school == school`, `\Student.school == nil`, and
    /// ``ManagedObjectContext/existing(_:withIDs:)`` fetches with it.
    ///
    /// Archiving it is not supported (object IDs belong to one coordinator): encoding and
    /// decoding throw.
    public struct ObjectIdentity<Root: PredicateExpression>: PredicateExpression {
        /// The result type: whether the object is one of `objectIDs`.
        public typealias Output = Bool
        /// The object tested (a managed object, or an optional one).
        public let root: Root
        /// The IDs it is compared with; nil matches no object.
        public let objectIDs: [ObjectID?]

        /// Creates the expression.
        public init(root: Root, objectIDs: [ObjectID?]) {
            self.root = root
            self.objectIDs = objectIDs
        }

        /// Evaluates the test: the object's current ID is one of `objectIDs`.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            let object = (try root.evaluate(bindings) as Any) as? ManagedObject
            return objectIDs.contains(object?.objectID)
        }
    }

    /// Whether a to-many relationship holds an object, compared by object ID:
    /// `Predicate.contains(\School.students, student)` builds it.
    ///
    /// Archiving it is not supported (object IDs belong to one coordinator): encoding and
    /// decoding throw.
    public struct ToManyContainsObject<Root: PredicateExpression>: PredicateExpression {
        /// The result type: whether the relationship holds the object.
        public typealias Output = Bool
        /// The to-many relationship (a set or an array of objects).
        public let root: Root
        /// The object looked for.
        public let objectID: ObjectID

        /// Creates the expression.
        public init(root: Root, objectID: ObjectID) {
            self.root = root
            self.objectID = objectID
        }

        /// Evaluates the test: one of the related objects has the ID.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            guard let related = (try root.evaluate(bindings) as Any) as? any Sequence else { return false }
            return PredicateCompiler.elements(of: related).contains { ($0 as? ManagedObject)?.objectID == objectID }
        }
    }
}

extension PredicateExpressions.ObjectIdentity: Sendable where Root: Sendable {}
extension PredicateExpressions.ObjectIdentity: Codable {
    /// Throws: object IDs cannot be archived.
    public func encode(to encoder: any Encoder) throws { throw PredicateCompiler.notArchivable(Self.self, encoder.codingPath) }
    /// Throws: object IDs cannot be archived.
    public init(from decoder: any Decoder) throws { throw PredicateCompiler.notUnarchivable(Self.self, decoder.codingPath) }
}
extension PredicateExpressions.ObjectIdentity: StandardPredicateExpression where Root: StandardPredicateExpression {}

extension PredicateExpressions.ToManyContainsObject: Sendable where Root: Sendable {}
extension PredicateExpressions.ToManyContainsObject: Codable {
    /// Throws: object IDs cannot be archived.
    public func encode(to encoder: any Encoder) throws { throw PredicateCompiler.notArchivable(Self.self, encoder.codingPath) }
    /// Throws: object IDs cannot be archived.
    public init(from decoder: any Decoder) throws { throw PredicateCompiler.notUnarchivable(Self.self, decoder.codingPath) }
}
extension PredicateExpressions.ToManyContainsObject: StandardPredicateExpression where Root: StandardPredicateExpression {}

extension PredicateCompiler {
    /// The error encoding an expression that names objects throws.
    static func notArchivable(_ type: Any.Type, _ codingPath: [any CodingKey]) -> EncodingError {
        EncodingError.invalidValue(typeName(type), .init(codingPath: codingPath, debugDescription: notArchivableReason(type)))
    }

    /// The error decoding an expression that names objects throws.
    static func notUnarchivable(_ type: Any.Type, _ codingPath: [any CodingKey]) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: notArchivableReason(type)))
    }

    private static func notArchivableReason(_ type: Any.Type) -> String {
        "\(typeName(type)) cannot be archived: object IDs belong to one coordinator."
    }
}

extension PredicateExpressions.ObjectIdentity: QueryCompilable {
    /// An object comparison (`.isNull` for nil, `.inList` for several IDs).
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        guard case .objectPath(let path, _) = try context.operand(root) else {
            throw context.unsupported(Self.self, "only the fetched object and to-one relationships can be compared with objects")
        }
        let object = QueryExpression.path(path)
        if objectIDs.count == 1, let only = objectIDs.first {
            return .value(only.map { .compare(.equal, object, .object($0)) } ?? .isNull(object))
        }
        return .value(.inList(object, objectIDs.map { .object($0) }))
    }
}

extension PredicateExpressions.ToManyContainsObject: QueryCompilable {
    /// Whether any destination is the object.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        guard case .toMany(let path, _) = try context.operand(root) else {
            throw context.unsupported(Self.self, "contains(_:) with an object is only supported on to-many relationships")
        }
        let scope = context.depth + 1
        return .value(.anyMatch(path, scope: scope, predicate: .compare(.equal, .path(PropertyPath(scope: scope)), .object(objectID))))
    }
}
