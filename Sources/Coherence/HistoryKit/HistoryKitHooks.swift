import Foundation

/// The observer and merge hooks registered with a ``PersistentHistoryTrackingKit``.
final class HistoryKitHooks: Sendable {
    private struct Observer {
        let id: UUID
        let key: String
        let callback: HookCallback
    }
    private struct MergeHook {
        let id: UUID
        let callback: MergeHookCallback
    }
    private let observers = LockedValue<[Observer]>([])
    private let mergeHooks = LockedValue<[MergeHook]>([])

    static func key(_ entityName: String, _ operation: HookOperation) -> String { entityName + "." + operation.rawValue }

    func addObserver(entityName: String, operation: HookOperation, _ callback: @escaping HookCallback) -> UUID {
        let id = UUID()
        observers.withLock { $0.append(Observer(id: id, key: Self.key(entityName, operation), callback: callback)) }
        return id
    }

    func removeObserver(id: UUID) -> Bool {
        observers.withLock { list in
            guard let i = list.firstIndex(where: { $0.id == id }) else { return false }
            list.remove(at: i)
            return true
        }
    }

    func removeObservers(entityName: String, operation: HookOperation) {
        let key = Self.key(entityName, operation)
        observers.withLock { $0.removeAll { $0.key == key } }
    }

    func removeAllObservers() { observers.withLock { $0.removeAll() } }

    func addMergeHook(before: UUID?, _ callback: @escaping MergeHookCallback) -> UUID {
        let id = UUID()
        mergeHooks.withLock { list in
            let hook = MergeHook(id: id, callback: callback)
            if let before, let i = list.firstIndex(where: { $0.id == before }) { list.insert(hook, at: i) } else { list.append(hook) }
        }
        return id
    }

    func removeMergeHook(id: UUID) -> Bool {
        mergeHooks.withLock { list in
            guard let i = list.firstIndex(where: { $0.id == id }) else { return false }
            list.remove(at: i)
            return true
        }
    }

    func removeAllMergeHooks() { mergeHooks.withLock { $0.removeAll() } }

    /// Hands each transaction's changes to the observers, grouped by entity and operation in
    /// order of first appearance, one call per group and observer (in registration order).
    func notifyObservers(of transactions: [PersistentHistoryTransaction]) async {
        let registered = observers.withLock { $0 }
        guard !registered.isEmpty else { return }
        for t in transactions {
            var order: [String] = []
            var groups: [String: [HookContext]] = [:]
            for change in t.changes ?? [] {
                let operation = HookOperation(change.changeType)
                let entityName = change.changedObjectID.entity.name
                let key = Self.key(entityName, operation)
                if groups[key] == nil { order.append(key) }
                groups[key, default: []].append(
                    HookContext(
                        entityName: entityName, operation: operation, objectID: change.changedObjectID,
                        objectIDURL: change.changedObjectID.uriRepresentation(), tombstone: Tombstone(change, timestamp: t.timestamp),
                        timestamp: t.timestamp, author: t.author ?? "Unknown"))
            }
            for key in order {
                guard let group = groups[key] else { continue }
                for observer in registered where observer.key == key { await observer.callback(group) }
            }
        }
    }

    /// Runs the merge hooks in order; true when one finished the merge. Rethrows a hook's error.
    func runMergeHooks(_ input: MergeHookInput) async throws -> Bool {
        for hook in mergeHooks.withLock({ $0 }) where try await hook.callback(input) == .finish { return true }
        return false
    }
}
