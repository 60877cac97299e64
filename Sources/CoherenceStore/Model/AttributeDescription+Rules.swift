import Foundation

extension AttributeDescription {
    /// What is wrong with a non-nil stored value under the attribute's ``validation`` rules
    /// (range, length, pattern): one phrase per broken rule, for example `is 3.0, below the
    /// minimum 5.0`; empty when the value passes. Saves and batch requests share these rules.
    package func ruleViolations(_ value: StoredValue) -> [String] {
        var failures: [String] = []
        let rules = validation
        if rules.minimum != nil || rules.maximum != nil {
            let number: Double?
            switch value {
            case .integer(let i): number = Double(i)
            case .real(let d): number = d
            case .blob where type.isFloatingPoint: number = value.doubleValue  // NaN passes, as NaN < min is false
            case .text(let t) where type == .decimal: number = DecimalText.parse(t).map { NSDecimalNumber(decimal: $0).doubleValue }
            default: number = nil
            }
            if let n = number {
                if let min = rules.minimum, n < min { failures.append("is \(n), below the minimum \(min)") }
                if let max = rules.maximum, n > max { failures.append("is \(n), above the maximum \(max)") }
            }
        }
        if rules.minLength != nil || rules.maxLength != nil {
            let length: Int?
            switch value {
            case .text(let t): length = t.count
            case .blob(let d): length = d.count
            default: length = nil
            }
            if let n = length {
                if let min = rules.minLength, n < min { failures.append("has length \(n), shorter than \(min)") }
                if let max = rules.maxLength, n > max { failures.append("has length \(n), longer than \(max)") }
            }
        }
        if let regex = compiledRegex, case .text(let t) = value {
            let range = NSRange(t.startIndex..<t.endIndex, in: t)
            let match = regex.firstMatch(in: t, options: [.anchored], range: range)
            if match?.range != range { failures.append("does not match the pattern \(rules.regularExpression ?? "")") }
        }
        return failures
    }
}
