/// Translates the regular expressions of `.matches` predicates (ICU syntax, as
/// `NSRegularExpression` reads them on SQLite and in memory) into PostgreSQL's (POSIX "advanced"
/// expressions), for the part of the syntax where both mean the same; anything else is refused,
/// so a PostgreSQL store never answers a `.matches` differently from a SQLite one.
///
/// Translated: literal characters; escaped metacharacters (`\.`, `\*`, `\(`…); `.` (ICU's: any
/// character but a line terminator, written out as a bracket expression, since PostgreSQL's `.`
/// also matches a newline); groups `(…)` and `(?:…)`; alternation `|`; the greedy quantifiers
/// `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`; bracket expressions of literal characters and ranges
/// (`[a-z0-9_]`, `[^,]`). Case-insensitive patterns (`(?i)` first) have each ASCII letter
/// written as both cases (and `k`, `s` with the Kelvin sign and long s, which ICU's case
/// folding matches), and may not contain other letters: PostgreSQL's own case-insensitive
/// matching depends on the database's locale.
///
/// Refused: character classes (`\d`, `\w`, `\s`, `\p{…}`: Unicode in ICU, locale-dependent in
/// PostgreSQL), anchors and boundaries inside the pattern (`^`, `$`, `\b`: ICU's `$` also matches
/// before a final line terminator), lazy and possessive quantifiers, look-arounds, back
/// references, inline flags other than a leading `(?i)`, and bracket expressions with classes,
/// escapes or set operations.
enum PostgreSQLRegex {
    /// The translated pattern, anchored to match the whole text (as `.matches` does); nil when
    /// the pattern uses syntax outside the translated part.
    static func translate(_ icuPattern: String) -> String? {
        var pattern = Substring(icuPattern)
        var caseInsensitive = false
        if pattern.hasPrefix("(?i)") {
            caseInsensitive = true
            pattern = pattern.dropFirst(4)
        }
        var out = "^(?:"
        var chars = Array(pattern.unicodeScalars)[...]
        var depth = 0
        // Whether the last item can take a quantifier (and has not taken one).
        var quantifiable = false
        while let c = chars.popFirst() {
            switch c {
            case "\\":
                guard let e = chars.popFirst(), Self.escapable.contains(e) else { return nil }
                guard let item = literal(e, caseInsensitive) else { return nil }
                out += item
                quantifiable = true
            case ".":
                out += "[^\\n\\r\\u0085\\u2028\\u2029]"
                quantifiable = true
            case "(":
                if chars.first == "?" {
                    guard chars.dropFirst().first == ":" else { return nil }  // only (?:…)
                    chars = chars.dropFirst(2)
                }
                out += "(?:"
                depth += 1
                quantifiable = false
            case ")":
                guard depth > 0 else { return nil }
                depth -= 1
                out += ")"
                quantifiable = true
            case "|":
                out += "|"
                quantifiable = false
            case "*", "+", "?":
                guard quantifiable else { return nil }
                // Lazy (`*?`) and possessive (`*+`) forms are refused.
                if let next = chars.first, next == "?" || next == "+" { return nil }
                out.unicodeScalars.append(c)
                quantifiable = false
            case "{":
                guard quantifiable, let (bounds, rest) = repetition(chars) else { return nil }
                chars = rest
                if let next = chars.first, next == "?" || next == "+" { return nil }
                out += "{" + bounds + "}"
                quantifiable = false
            case "[":
                guard let (set, rest) = bracket(chars, caseInsensitive) else { return nil }
                chars = rest
                out += set
                quantifiable = true
            case "^", "$", "]", "}":
                return nil
            default:
                guard let item = literal(c, caseInsensitive) else { return nil }
                out += item
                quantifiable = true
            }
        }
        guard depth == 0 else { return nil }
        return out + ")$"
    }

    /// The metacharacters a backslash makes literal (in both syntaxes).
    private static let escapable: Set<Unicode.Scalar> = [
        "\\", ".", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "^", "$", "-", "/"
    ]

    /// A literal character, as PostgreSQL reads it (escaped when it means something there);
    /// both cases when case-insensitive (nil: a letter outside ASCII, whose folding differs).
    private static func literal(_ c: Unicode.Scalar, _ caseInsensitive: Bool) -> String? {
        if caseInsensitive, let cases = asciiCases(c) { return "[" + cases + "]" }
        if caseInsensitive, !foldsAsASCII(c) { return nil }
        return quoted(c)
    }

    /// Whether a case-insensitive match of `c` is the same in both engines: an ASCII character,
    /// or one that is no letter and has no other case.
    private static func foldsAsASCII(_ c: Unicode.Scalar) -> Bool {
        c.isASCII || !(c.properties.isAlphabetic || c.properties.changesWhenCaseFolded)
    }

    /// A character written so that PostgreSQL reads it literally, outside a bracket expression.
    private static func quoted(_ c: Unicode.Scalar) -> String {
        if "\\.*+?()[]{}|^$".unicodeScalars.contains(c) { return "\\" + String(c) }
        if c.value < 0x20 || c.value == 0x7F {
            let hex = String(c.value, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
        return String(c)
    }

    /// Both cases of an ASCII letter (with the characters ICU's case folding adds to `k` and
    /// `s`), for a bracket expression; nil for other characters.
    private static func asciiCases(_ c: Unicode.Scalar) -> String? {
        guard c.isASCII, c.properties.isAlphabetic else { return nil }
        let lower = Character(c).lowercased(), upper = Character(c).uppercased()
        var cases = lower + upper
        if lower == "k" { cases += "\u{212A}" }
        if lower == "s" { cases += "\u{17F}" }
        return cases
    }

    /// `{m}`, `{m,}` or `{m,n}` (after the `{`): its bounds and the rest of the pattern.
    private static func repetition(_ chars: ArraySlice<Unicode.Scalar>) -> (String, ArraySlice<Unicode.Scalar>)? {
        guard let close = chars.firstIndex(of: "}") else { return nil }
        let inside = String(String.UnicodeScalarView(chars[chars.startIndex..<close]))
        let parts = inside.split(separator: ",", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let low = Int(parts[0]), low <= 255 else { return nil }
        if parts.count == 2 && !parts[1].isEmpty {
            guard let high = Int(parts[1]), high >= low, high <= 255 else { return nil }
        }
        return (inside, chars[(close + 1)...])
    }

    /// A bracket expression (after the `[`) of literal characters and ranges, optionally
    /// negated: its translation and the rest of the pattern.
    private static func bracket(
        _ chars: ArraySlice<Unicode.Scalar>, _ caseInsensitive: Bool
    ) -> (String, ArraySlice<Unicode.Scalar>)? {
        var rest = chars
        var negated = false
        if rest.first == "^" {
            negated = true
            rest = rest.dropFirst()
        }
        var members: [(Unicode.Scalar, Unicode.Scalar)] = []
        while let c = rest.popFirst() {
            if c == "]" {
                guard !members.isEmpty else { return nil }
                var set = negated ? "[^" : "["
                var dash = false
                for (low, high) in members {
                    for (l, h) in caseInsensitive ? caseClosed(low, high) : [(low, high)] {
                        if l == "-" && h == "-" {
                            dash = true
                            continue
                        }
                        set += l == h ? String(l) : String(l) + "-" + String(h)
                    }
                }
                if dash { set += "-" }  // last: literal
                return (set + "]", rest)
            }
            // Only plain characters: no escapes, classes, nested sets or set operations.
            guard c != "[" && c != "\\" && c != "&" else { return nil }
            guard !caseInsensitive || foldsAsASCII(c) else { return nil }
            if rest.first == "-", let high = rest.dropFirst().first, high != "]" {
                guard high != "[" && high != "\\" && high != "&", c.value <= high.value else { return nil }
                guard !caseInsensitive || foldsAsASCII(high) else { return nil }
                // A range between an ASCII letter and a non-letter is refused when
                // case-insensitive (its case closure would not be a range).
                if caseInsensitive && (c.properties.isAlphabetic != high.properties.isAlphabetic) { return nil }
                if caseInsensitive && c.properties.isAlphabetic && c.properties.isLowercase != high.properties.isLowercase { return nil }
                members.append((c, high))
                rest = rest.dropFirst(2)
            } else {
                guard c != "^" || !members.isEmpty else { return nil }
                members.append((c, c))
            }
        }
        return nil  // no closing bracket
    }

    /// A range and its other case (ASCII letters; with the Kelvin sign and long s when the range
    /// holds `k` or `s`).
    private static func caseClosed(_ low: Unicode.Scalar, _ high: Unicode.Scalar) -> [(Unicode.Scalar, Unicode.Scalar)] {
        guard low.isASCII, high.isASCII, low.properties.isAlphabetic, high.properties.isAlphabetic,
            let l = Character(low).lowercased().unicodeScalars.first, let h = Character(high).lowercased().unicodeScalars.first,
            let ul = Character(low).uppercased().unicodeScalars.first, let uh = Character(high).uppercased().unicodeScalars.first
        else { return [(low, high)] }
        var ranges: [(Unicode.Scalar, Unicode.Scalar)] = [(l, h), (ul, uh)]
        if l.value <= 0x6B && 0x6B <= h.value { ranges.append(("\u{212A}", "\u{212A}")) }
        if l.value <= 0x73 && 0x73 <= h.value { ranges.append(("\u{17F}", "\u{17F}")) }
        return ranges
    }
}
