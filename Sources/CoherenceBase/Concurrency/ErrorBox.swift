/// Any error as a `Sendable` value (an action's error kept by its proxy, a save's error handed
/// to another thread).
package struct ErrorBox: Error, @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: the proxy only stores and hands back the error value; it never
    // mutates it.
    package let error: any Error
    package init(_ error: any Error) { self.error = error }
    package var description: String { "\(error)" }
}
