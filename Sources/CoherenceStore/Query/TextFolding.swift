import Foundation

/// Case- and diacritic-insensitive folding, shared by SQL and in-memory evaluation.
package enum TextFolding {
    package static func fold(_ s: String) -> String {
        // Fast path: ASCII only needs lowercasing.
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return s.lowercased() }
        return s.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }
}
