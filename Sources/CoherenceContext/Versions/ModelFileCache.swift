import CoherenceBase
import Foundation

/// The models of ``ModelFileManager`` types, loaded once per type and version, and the last
/// failure of each type's current version (which ``ModelManager/checkedModel()`` throws).
final class ModelFileCache: Sendable {
    static let shared = ModelFileCache()

    private struct Key: Hashable {
        let type: ObjectIdentifier
        let version: String?
    }
    private struct State {
        var models: [Key: ManagedObjectModel] = [:]
        var failures: [ObjectIdentifier: ModelError] = [:]
    }
    private let state = LockedValue(State())

    /// The kept model of `type` at `version`, or the one `load` makes (kept when it succeeds).
    /// Two threads loading at once may both load; the first to finish is kept and returned to both.
    func model(
        of type: Any.Type, version: String?, load: () throws(ModelError) -> ManagedObjectModel
    ) throws(ModelError) -> ManagedObjectModel {
        let key = Key(type: ObjectIdentifier(type), version: version)
        if let kept = state.withLock({ $0.models[key] }) { return kept }
        do {
            let loaded = try load()
            return state.withLock { s in
                if let kept = s.models[key] { return kept }
                s.models[key] = loaded
                if version == nil { s.failures[key.type] = nil }
                return loaded
            }
        } catch {
            if version == nil { state.withLock { $0.failures[key.type] = error } }
            throw error
        }
    }

    /// Why `type`'s current version could not be loaded, the last time it was tried.
    func failure(of type: Any.Type) -> ModelError? {
        state.withLock { $0.failures[ObjectIdentifier(type)] }
    }
}
