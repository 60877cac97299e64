import Foundation

// `#Predicate { a.evaluate($0) && b.evaluate($0) }` expands to
// `PredicateExpressions.build_evaluate(PredicateExpressions.build_Arg(a), $0)`, a
// `PredicateExpressions.PredicateEvaluate` node. Foundation has that node only on Apple platforms
// (and only there does its macro accept `evaluate`); elsewhere Coherence provides it with the
// same shape, so the composition operators (`&&`, `||`, `!` over `Predicate` values) build the
// same trees everywhere and the translator handles them in one place. Off Apple platforms a
// nested predicate cannot be archived (Foundation's `Predicate` is not `Codable` there):
// encoding and decoding throw.

#if !canImport(Darwin)
extension PredicateExpressions {
    /// `predicate.evaluate(input…)` inside a predicate: the nested predicate's answer for the
    /// inputs.
    public struct PredicateEvaluate<Condition: PredicateExpression, each Input: PredicateExpression>: PredicateExpression
    where Condition.Output == Predicate<repeat (each Input).Output> {
        /// The result type: the nested predicate's answer.
        public typealias Output = Bool
        /// The nested predicate.
        public let predicate: Condition
        /// Its inputs.
        public let input: (repeat each Input)

        /// Creates the expression.
        public init(predicate: Condition, input: repeat each Input) {
            self.predicate = predicate
            self.input = (repeat each input)
        }

        /// Evaluates the nested predicate on the inputs.
        public func evaluate(_ bindings: PredicateBindings) throws -> Bool {
            try predicate.evaluate(bindings).evaluate(repeat try (each input).evaluate(bindings))
        }
    }

    /// Builds `predicate.evaluate(input…)`, as the `#Predicate` macro does on Apple platforms.
    public static func build_evaluate<Condition, each Input>(_ predicate: Condition, _ input: repeat each Input)
        -> PredicateEvaluate<Condition, repeat each Input>
    {
        PredicateEvaluate(predicate: predicate, input: repeat each input)
    }
}

extension PredicateExpressions.PredicateEvaluate: Sendable where Condition: Sendable, repeat each Input: Sendable {}

extension PredicateExpressions.PredicateEvaluate: Codable {
    /// Throws: Foundation's `Predicate` is not `Codable` on this platform.
    public func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(
            "PredicateEvaluate",
            .init(codingPath: encoder.codingPath, debugDescription: "A nested predicate cannot be archived on this platform."))
    }

    /// Throws: Foundation's `Predicate` is not `Codable` on this platform.
    public init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(
            .init(codingPath: decoder.codingPath, debugDescription: "A nested predicate cannot be archived on this platform."))
    }
}

extension PredicateExpressions.PredicateEvaluate: StandardPredicateExpression
where Condition == PredicateExpressions.Value<Predicate<repeat (each Input).Output>>, repeat each Input: StandardPredicateExpression {}
#endif

extension PredicateExpressions.PredicateEvaluate: QueryCompilable {
    /// The nested predicate's expression, with its variables bound to the inputs.
    package func compile(_ context: inout PredicateCompiler.Context) throws(CoherenceError) -> PredicateCompiler.Operand {
        guard case .constant(let value) = try context.operand(predicate), let nested = value as? any NestedPredicate else {
            throw context.unsupported(Self.self, "the predicate it evaluates must be a Predicate value captured by the predicate")
        }
        var inputs: [PredicateCompiler.Operand] = []
        for element in repeat each input {
            inputs.append(try context.operand(element))
        }
        return .value(try nested.compileNested(inputs, part: Self.self, &context))
    }
}

/// A `Predicate` used inside another one.
protocol NestedPredicate {
    /// The predicate's expression as a condition, with its variables bound to `inputs`.
    func compileNested(_ inputs: [PredicateCompiler.Operand], part: Any.Type, _ context: inout PredicateCompiler.Context)
        throws(CoherenceError) -> QueryExpression
}

extension Predicate: NestedPredicate {
    func compileNested(_ inputs: [PredicateCompiler.Operand], part: Any.Type, _ context: inout PredicateCompiler.Context)
        throws(CoherenceError) -> QueryExpression
    {
        var keys: [PredicateExpressions.VariableID] = []
        for v in repeat each variable { keys.append(v.key) }
        guard keys.count == inputs.count else {
            throw context.unsupported(part, "the nested predicate takes \(keys.count) inputs, not \(inputs.count)")
        }
        let saved = context.bindings
        for (key, operand) in zip(keys, inputs) { context.bindings[key] = operand }
        defer { context.bindings = saved }
        return try context.condition(expression)
    }
}
