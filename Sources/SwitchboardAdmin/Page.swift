/// One page of a list: `{"<key>": [...], "next_cursor": "…" | null}`; `next_cursor` is always
/// present so clients can loop until it is null.
struct Page<Item: Encodable>: Encodable {
    let key: String
    let items: [Item]
    let nextCursor: String?

    private struct Key: CodingKey {
        let stringValue: String
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(items, forKey: Key(key))
        try container.encode(nextCursor, forKey: Key("next_cursor"))
    }
}
