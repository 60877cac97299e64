import Foundation
import Testing
@testable import Coherence
@testable import CoherenceBase
@testable import CoherenceContext
@testable import CoherenceStore

/// A kit starting on a store whose history is empty (a new store, at the first launch of an app
/// and its extension) claims its progress while another author writes its first transaction.
@Suite("History kit: claiming progress")
struct HistoryKitClaimTests {
    /// A transaction another author commits while the kit claims its progress in a store without
    /// history is merged, not taken as already processed.
    @Test(arguments: storedTypes)
    func aTransactionCommittedWhileTheKitClaimsIsMerged(_ type: StoreType) async throws {
        let (app, widget) = try kitPair(type)
        let kit = app.kit(cleanStrategy: .none, autoStart: false)
        defer { kit.stop() }
        let merged = LockedValue<[Int64]>([])
        await kit.registerMergeHook { input in
            merged.withLock { $0 += input.transactions.map(\.transactionNumber) }
            return .goOn
        }
        let once = LockedValue(false)
        kit.engine.claimHook.withLock {
            $0 = {
                guard
                    !once.withLock({ done in
                        defer { done = true }; return done
                    })
                else { return }
                _ = try? widget.insert(1)
            }
        }
        let rounds = RoundReader(kit.engine)
        kit.start()
        #expect(once.withLock { $0 })
        // (The kit's first round may have merged the widget's first transaction by now: its
        // progress is 0 or 1 here; what matters is that the transaction is merged, below.)
        try widget.insert(2)
        #expect(await rounds.until { merged.withLock { $0.contains(2) } })
        #expect(merged.withLock { $0 } == [1, 2])
        #expect(try await app.shown("widget", 1) == "widget 1")
    }
}
