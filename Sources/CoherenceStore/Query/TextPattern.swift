import Foundation

/// The wildcard (`LIKE`) and regular-expression (`MATCHES`) string tests, shared by SQL (as
/// registered functions) and in-memory evaluation so both give the same answers.
package enum TextPattern {
    /// Whether `text` matches the wildcard `pattern` as a whole: `?` matches exactly one
    /// character (Unicode scalar), `*` any run of them (also none); every other character
    /// matches itself exactly.
    package static func like(_ text: String, _ pattern: String) -> Bool {
        let t = Array(text.unicodeScalars), p = Array(pattern.unicodeScalars)
        var ti = 0, pi = 0
        var star = -1, resume = 0
        while ti < t.count {
            if pi < p.count && (p[pi] == "?" || (p[pi] != "*" && p[pi] == t[ti])) {
                ti += 1
                pi += 1
            } else if pi < p.count && p[pi] == "*" {
                star = pi
                resume = ti
                pi += 1
            } else if star >= 0 {
                // Let the last `*` swallow one more character and try again.
                pi = star + 1
                resume += 1
                ti = resume
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == "*" { pi += 1 }
        return pi == p.count
    }

    /// Whether `text` as a whole matches the regular expression `pattern` (ICU syntax, as
    /// `NSRegularExpression`); nil when the pattern is not a valid regular expression.
    package static func matches(_ text: String, _ pattern: String) -> Bool? {
        guard let regex = regex(pattern) else { return nil }
        let range = NSRange(text.startIndex..<text.endIndex, in: text)
        return regex.firstMatch(in: text, options: [], range: range) != nil
    }

    /// The error that makes `pattern` invalid, or nil when it is a valid regular expression.
    package static func regexError(_ pattern: String) -> (any Error)? {
        do {
            _ = try NSRegularExpression(pattern: pattern)
            return nil
        } catch {
            return error
        }
    }

    /// The regular expression of a pattern that must match the whole text. The pattern is
    /// checked on its own first, so wrapping it cannot make an invalid pattern valid.
    /// Compiled expressions are kept (a fetch tests one pattern against every row).
    private static func regex(_ pattern: String) -> NSRegularExpression? {
        if let cached = cache.withLock({ $0[pattern] }) { return cached }
        guard regexError(pattern) == nil,
            let regex = try? NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z")
        else { return nil }
        cache.withLock { c in
            if c.count >= 64 { c.removeAll() }
            c[pattern] = regex
        }
        return regex
    }

    private static let cache = LockedValue<[String: NSRegularExpression]>([:])

    /// A pattern that matches case-insensitively: the `(?i)` flag in front.
    package static func ignoringCase(_ pattern: String) -> String { "(?i)" + pattern }
}
