/// Identity of a context's queue.
final class ContextToken: Sendable {}
