/// Byte-wise text search, the semantics of SQLite's `instr` (text compares by UTF-8 bytes).
package enum TextSearch {
    /// Whether `needle` occurs in `haystack` (an empty needle always does).
    package static func contains(_ haystack: String, _ needle: String) -> Bool {
        let h = Array(haystack.utf8), n = Array(needle.utf8)
        if n.isEmpty { return true }
        if n.count > h.count { return false }
        var i = 0
        let last = h.count - n.count
        while i <= last {
            if h[i] == n[0] {
                var j = 1
                while j < n.count && h[i + j] == n[j] { j += 1 }
                if j == n.count { return true }
            }
            i += 1
        }
        return false
    }

    /// Whether `text` begins with `prefix`, byte-wise.
    package static func hasPrefix(_ text: String, _ prefix: String) -> Bool {
        text.utf8.starts(with: prefix.utf8)
    }

    /// Whether `text` ends with `suffix`, byte-wise.
    package static func hasSuffix(_ text: String, _ suffix: String) -> Bool {
        let t = text.utf8, s = suffix.utf8
        return t.count >= s.count && t.suffix(s.count).elementsEqual(s)
    }
}
