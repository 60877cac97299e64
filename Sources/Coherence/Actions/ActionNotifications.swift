import Foundation

extension Notification.Name {
    /// Posted when an action starts executing; `object` is the connect,
    /// `userInfo["ActionProxy"]` the proxy.
    public static let actionDidStartExecuting = Notification.Name("ActionDidStartExecuting")
    /// Posted when an action finished (after ``actionDidStartExecuting``); `object` is the
    /// connect, `userInfo["ActionProxy"]` the proxy.
    public static let actionDidFinishExecuting = Notification.Name("ActionDidFinishExecuting")
}

extension ActionProxy {
    /// The `userInfo` key of the proxy in action notifications.
    public static let userInfoKey = "ActionProxy"
}

/// An action notification as a `Sendable` value, for `connect.actionEvents`.
public struct ActionEvent: Sendable, CustomStringConvertible {
    /// What happened.
    public enum Kind: Sendable, Equatable {
        /// The action started executing.
        case didStartExecuting
        /// The action finished.
        case didFinishExecuting
    }
    /// What happened.
    public let kind: Kind
    /// The action's proxy.
    public let proxy: ActionProxy
    /// The kind followed by the proxy's description.
    public var description: String { "\(kind) \(proxy)" }
}

/// Posts a connect's action notifications and feeds its `actionEvents` streams.
final class ActionNotifier: Sendable {
    private let owner = LockedValue<WeakObject?>(nil)
    private let continuations = LockedValue<[UUID: AsyncStream<ActionEvent>.Continuation]>([:])

    func setOwner(_ object: AnyObject & Sendable) { owner.withLock { $0 = WeakObject(object) } }

    func post(_ kind: ActionEvent.Kind, _ proxy: ActionProxy) {
        let object = owner.withLock { $0?.object }
        let name: Notification.Name = kind == .didStartExecuting ? .actionDidStartExecuting : .actionDidFinishExecuting
        NotificationCenter.default.post(name: name, object: object, userInfo: [ActionProxy.userInfoKey: proxy])
        let event = ActionEvent(kind: kind, proxy: proxy)
        for c in continuations.withLock({ Array($0.values) }) { c.yield(event) }
    }

    /// Ends every stream made so far (their `for await` loops finish).
    func finishStreams() {
        let all = continuations.withLock { c in
            defer { c = [:] }
            return Array(c.values)
        }
        for c in all { c.finish() }
    }

    func stream() -> AsyncStream<ActionEvent> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<ActionEvent>.makeStream(bufferingPolicy: .unbounded)
        continuation.onTermination = { [weak self] _ in _ = self?.continuations.withLock { $0.removeValue(forKey: id) } }
        continuations.withLock { $0[id] = continuation }
        return stream
    }
}

/// A weak reference to a Sendable object.
struct WeakObject: @unchecked Sendable {
    // @unchecked Sendable: a weak reference to an object that is itself Sendable.
    weak var object: AnyObject?
    init(_ object: AnyObject & Sendable) { self.object = object }
}
