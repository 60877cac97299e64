/// What a merge hook tells the kit to do next (PersistentHistoryTrackingKit 2's
/// `MergeHookResult`).
public enum MergeHookResult: Sendable, Hashable {
    /// Run the next hook (after the last one, the kit's own merge).
    case goOn
    /// The hook finished the merge: skip the remaining hooks and the kit's own merge.
    case finish
}
