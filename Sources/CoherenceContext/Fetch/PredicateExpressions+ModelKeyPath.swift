import Foundation

extension PredicateExpressions {
    /// A key path of a managed object read in a predicate: an attribute, a relationship, or an
    /// attribute reached through to-one relationships (`\Student.school?.name`). The key-path
    /// builders (`\.age > 30`, `.contains(\.name, "a")`) read their key paths with it.
    ///
    /// Unlike Foundation's `PredicateExpressions.KeyPath`, which stops the process for a key path
    /// of several components, it accepts any key path: one that cannot be translated is a
    /// `.unsupportedPredicate` error when the predicate is compiled. Archiving it is not
    /// supported (key paths are not `Codable`): encoding and decoding throw.
    public struct ModelKeyPath<Root: PredicateExpression, Output>: PredicateExpression {
        /// The object read.
        public let root: Root
        /// The key path read on it.
        public let keyPath: any Swift.KeyPath<Root.Output, Output> & Sendable

        /// Creates the expression.
        public init(root: Root, keyPath: any Swift.KeyPath<Root.Output, Output> & Sendable) {
            self.root = root
            self.keyPath = keyPath
        }

        /// Reads the key path on the object.
        public func evaluate(_ bindings: PredicateBindings) throws -> Output {
            try root.evaluate(bindings)[keyPath: keyPath]
        }
    }
}

extension PredicateExpressions.ModelKeyPath: Sendable where Root: Sendable {}
extension PredicateExpressions.ModelKeyPath: Codable {
    /// Throws: key paths cannot be archived.
    public func encode(to encoder: any Encoder) throws { throw PredicateCompiler.notArchivable(Self.self, encoder.codingPath) }
    /// Throws: key paths cannot be archived.
    public init(from decoder: any Decoder) throws { throw PredicateCompiler.notUnarchivable(Self.self, decoder.codingPath) }
}
extension PredicateExpressions.ModelKeyPath: StandardPredicateExpression where Root: StandardPredicateExpression {}

extension PredicateExpressions.ModelKeyPath: QueryCompilable {
    /// The relationship itself (an object or a to-many relationship), or the attribute the key
    /// path reads, directly or through to-one relationships.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        guard case .objectPath(let base, let entity) = try context.operand(root) else {
            throw context.unsupported(Self.self, "key path \(keyPath) can only be read on the fetched object or objects related to it")
        }
        let anyKeyPath = keyPath as AnyKeyPath
        // The relationship itself: the key path reads it, and nothing on its destination.
        if let relationship = entity.property(forKeyPath: anyKeyPath) as? RelationshipDescription,
            KeyPathResolver.valueType(Output.self, fits: relationship),
            KeyPathResolver.probe(anyKeyPath, entity: entity, through: [relationship]) == nil,
            let destination = relationship.destinationEntity
        {
            if relationship.isToMany { return .toMany(ToManyPath(base: base, relationship: relationship), destination) }
            var path = base
            path.relationships.append(relationship)
            return .objectPath(path, destination)
        }
        let attribute: PropertyPath
        do {
            attribute = try PredicateCompiler.sortPath(anyKeyPath, entity: entity)
        } catch {
            throw context.unsupported(
                Self.self,
                "key path \(anyKeyPath) of entity '\(entity.name)' is not an attribute, a relationship, or an attribute reached through to-one relationships (\(error.message))"
            )
        }
        return .value(
            .path(
                PropertyPath(scope: base.scope, relationships: base.relationships + attribute.relationships, attribute: attribute.attribute)
            ))
    }
}
