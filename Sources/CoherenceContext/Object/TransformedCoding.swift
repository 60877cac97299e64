import Foundation

/// The JSON coding of `@Transformed` values and of the JSON fallback of transformable
/// attributes. Non-finite floating-point numbers, which JSON has no form for (a plain
/// `JSONEncoder` refuses them), are written as the strings `"NaN"`, `"Infinity"` and
/// `"-Infinity"` and read back as numbers, so `[1, .nan]` or `Double.infinity` round-trip.
enum TransformedCoding {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        // Keys sorted: equal dictionaries (whose order depends on how each was built, and on
        // the process) encode to the same bytes, so setting or merging an equal value changes
        // nothing.
        encoder.outputFormatting = .sortedKeys
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return decoder
    }
}
