/// Coherence: a Core Data–style object graph and persistence framework for Linux and Apple platforms.
public enum Coherence {
    /// The framework version.
    public static let version = "0.1.0"
}
