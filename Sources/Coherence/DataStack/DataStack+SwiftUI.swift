#if canImport(SwiftUI)
import SwiftUI

extension View {
    /// Puts a ``DataStack`` in the view's environment, for ``EnvironmentDataStack`` (RCDataKit's
    /// `dataStackEnvironment(_:)`).
    ///
    /// ```swift
    /// ContentView().dataStackEnvironment(stack)
    /// ```
    public func dataStackEnvironment(_ stack: any DataStack) -> some View {
        environment(\.coherenceDataStack, stack)
    }
}

/// The ``DataStack`` a parent view put in the environment with
/// ``SwiftUI/View/dataStackEnvironment(_:)`` (RCDataKit's `@EnvironmentDataStack`).
///
/// ```swift
/// struct StudentsView: View {
///     @EnvironmentDataStack var dataStack
///     var body: some View { Text(dataStack?.viewContext.name ?? "no stack") }
/// }
/// ```
///
/// Unlike RCDataKit's, which crashes, it is nil when no parent view put a stack there.
@propertyWrapper
public struct EnvironmentDataStack: DynamicProperty {
    @Environment(\.coherenceDataStack) private var stack: (any DataStack)?

    /// Reads the stack from the environment.
    public init() {}

    /// The stack, or nil when no parent view put one in the environment.
    public var wrappedValue: (any DataStack)? { stack }
}

private struct DataStackKey: EnvironmentKey {
    static let defaultValue: (any DataStack)? = nil
}

extension EnvironmentValues {
    /// The ``DataStack`` of ``SwiftUI/View/dataStackEnvironment(_:)``.
    fileprivate var coherenceDataStack: (any DataStack)? {
        get { self[DataStackKey.self] }
        set { self[DataStackKey.self] = newValue }
    }
}
#endif
