import SwitchboardCore
import XCTest

/// Drives a ``PeerRelay`` by hand: the test moves the clock and names every connection, and
/// effects are rendered as short readable lines so assertions compare exact values.
///
/// Rendering: `send <label> <frame as text>[ receipt <sender>-><destination>]` and
/// `close <label> <code>`.
final class RelayHarness {
    var relay: PeerRelay
    private(set) var now: MonotonicTime = .zero
    private var nextSerial: UInt64 = 1
    private var labels: [ConnectionID: String] = [:]

    init(_ configuration: RelayConfiguration = RelayConfiguration()) {
        relay = PeerRelay(configuration: configuration)
    }

    // MARK: Clock

    /// Sets the clock to `milliseconds` after the origin.
    func at(milliseconds: Int64) {
        now = MonotonicTime(nanoseconds: milliseconds * 1_000_000)
    }

    /// Moves the clock forward.
    func advance(milliseconds: Int64) {
        now = now.advanced(by: .milliseconds(milliseconds))
    }

    // MARK: Events

    /// A fresh connection id rendered as `label`.
    func newConnection(_ label: String) -> ConnectionID {
        let connection = ConnectionID(thread: 0, serial: nextSerial)
        nextSerial += 1
        labels[connection] = label
        return connection
    }

    /// Opens a socket with these query parameters; returns it and the rendered effects.
    func open(_ label: String, query: [String: String]) -> (ConnectionID, [String]) {
        let connection = newConnection(label)
        var effects: [RelayEffect] = []
        relay.connectionOpened(connection, query: query, now: now, into: &effects)
        return (connection, render(effects))
    }

    /// Opens a socket for `id` with the configured key and asserts it got exactly OPEN.
    @discardableResult
    func connect(
        _ id: String, token: String? = nil, label: String? = nil, file: StaticString = #filePath, line: UInt = #line
    ) -> ConnectionID {
        let name = label ?? id
        let (connection, effects) = open(name, query: ["key": relay.configuration.key, "id": id, "token": token ?? "token-\(id)"])
        XCTAssertEqual(effects, ["send \(name) {\"type\":\"OPEN\"}"], "handshake of \(id)", file: file, line: line)
        return connection
    }

    /// A frame arrives on `connection`; returns the raw effects.
    func receiveRaw(_ connection: ConnectionID, _ bytes: [UInt8], isBinary: Bool = false) -> [RelayEffect] {
        var effects: [RelayEffect] = []
        relay.frameReceived(connection, bytes, isBinary: isBinary, now: now, into: &effects)
        return effects
    }

    /// A text frame arrives on `connection`; returns the rendered effects.
    @discardableResult
    func receive(_ connection: ConnectionID, _ text: String, isBinary: Bool = false) -> [String] {
        render(receiveRaw(connection, Array(text.utf8), isBinary: isBinary))
    }

    /// The periodic sweep at the current time; returns the rendered effects.
    func tick() -> [String] {
        var effects: [RelayEffect] = []
        relay.tick(now: now, into: &effects)
        return render(effects)
    }

    /// The transport reports the socket closed.
    func close(_ connection: ConnectionID) {
        relay.connectionClosed(connection)
    }

    /// The transport refused a relayed frame.
    func deliveryFailed(_ receipt: DeliveryReceipt, on connection: ConnectionID) -> [String] {
        var effects: [RelayEffect] = []
        relay.deliveryFailed(receipt, on: connection, now: now, into: &effects)
        return render(effects)
    }

    // MARK: Rendering

    func label(_ connection: ConnectionID) -> String { labels[connection] ?? connection.description }

    func render(_ effects: [RelayEffect]) -> [String] {
        effects.map { effect in
            switch effect {
            case .send(let connection, let bytes, let receipt):
                let text = String(validating: bytes, as: UTF8.self) ?? "<invalid UTF-8 \(bytes)>"
                let suffix = receipt.map { " receipt \($0.sender)->\($0.destination)" } ?? ""
                return "send \(label(connection)) \(text)\(suffix)"
            case .close(let connection, let code, _):
                return "close \(label(connection)) \(code.rawValue)"
            }
        }
    }

    /// Whether `id` is registered.
    func isRegistered(_ id: String) -> Bool { relay.isRegistered(PeerID(id)!) }
}

// MARK: - Frames

/// A client frame `{"type":…,"dst":…,"payload":…}`.
func frame(_ type: String, to destination: String, payload: String? = #"{"n":1}"#) -> String {
    var text = #"{"type":""# + type + #"","dst":""# + destination + #"""#
    if let payload { text += #","payload":"# + payload }
    return text + "}"
}

/// The relayed copy `{"type":…,"src":…,"dst":…,"payload":…}` as the server must build it.
func relayed(_ type: String, from source: String, to destination: String, payload: String? = #"{"n":1}"#) -> String {
    var text = #"{"type":""# + type + #"","src":""# + source + #"","dst":""# + destination + #"""#
    if let payload { text += #","payload":"# + payload }
    return text + "}"
}

/// `{"type":"EXPIRE","src":<offline>,"dst":<sender>}`.
func expireFrame(offline: String, sender: String) -> String {
    #"{"type":"EXPIRE","src":""# + offline + #"","dst":""# + sender + #""}"#
}

let openFrame = #"{"type":"OPEN"}"#

/// A receipt for `sender` → `destination`.
func receipt(_ sender: String, _ destination: String) -> DeliveryReceipt {
    DeliveryReceipt(sender: PeerID(sender)!, destination: PeerID(destination)!)
}
