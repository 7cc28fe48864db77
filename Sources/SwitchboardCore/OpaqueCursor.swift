import Foundation

/// A list cursor clients pass back as given: unpadded base64url of a JSON array of strings,
/// so no separator can be confused with the text of a part (endpoint names, ids).
public enum OpaqueCursor {
    public static func encode(_ parts: [String]) -> String {
        let json = JSONValue.array(parts.map(JSONValue.string))
        return Data(json.bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The `count` parts of `text`; `invalid_request` ("invalid cursor") when it is not one.
    public static func decode(_ text: String, count: Int) throws(SwitchboardError) -> [String] {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard !text.isEmpty, let data = Data(base64Encoded: base64), let array = JSONValue.parse(Array(data))?.arrayValue, array.count == count
        else { throw SwitchboardError(.invalidRequest, "invalid cursor") }
        let parts = array.compactMap(\.stringValue)
        guard parts.count == count else { throw SwitchboardError(.invalidRequest, "invalid cursor") }
        return parts
    }
}
