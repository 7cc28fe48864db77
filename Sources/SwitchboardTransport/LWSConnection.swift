import DequeModule
import SwitchboardCore

/// Per-connection state owned by one service thread. Never touched by other threads.
final class LWSConnection {
    enum Kind { case http, webSocket }

    let id: ConnectionID
    let wsi: OpaquePointer
    var kind: Kind = .http
    let remoteAddress: String
    /// The listener the connection arrived on.
    let listener: ListenerConfiguration
    /// Its one deadline (handshake, request, keep-alive, ping or close), kept in the thread's
    /// timer wheel.
    var timer: ConnectionTimer
    /// Counted in the thread's ``AddressGate`` (every accepted socket is).
    var counted = false
    /// A ping is due on the next writable callback.
    var pingDue = false

    // WebSocket
    var upgrade: WebSocketUpgrade?
    var receiving: [UInt8] = []
    /// Bytes of `receiving` taken from the shared ``PartialMessageBudget``.
    var reservedPartial = 0
    var receivingBinary = false
    var receivingInProgress = false
    /// A message went over `max_message_bytes`: further input is dropped until the 1009 close.
    var discardingInput = false
    /// Frames waiting for SERVER_WRITEABLE, with whether each is binary.
    var outbox = Deque<(bytes: [UInt8], binary: Bool)>()
    var pendingClose: (code: CloseCode, reason: String)?

    // HTTP
    var request: HTTPRequest?
    var requestBodyTooLarge = false
    /// The request was handed to the application; its response is awaited.
    var requestDispatched = false
    var response: HTTPResponse?
    /// The response refuses the request before its body was read: close once it is written,
    /// so the rest of the body is never parsed as a request.
    var closeAfterResponse = false

    // A request lws handed over as a raw socket (a method it does not know, CONNECT)
    /// Its request line as read so far; `nil` when none is being read.
    var requestLine: [UInt8]?
    /// Bytes read past the request line, dropped.
    var droppedBytes = 0

    init(id: ConnectionID, wsi: OpaquePointer, listener: ListenerConfiguration, remoteAddress: String, timer: ConnectionTimer) {
        self.id = id
        self.wsi = wsi
        self.listener = listener
        self.remoteAddress = remoteAddress
        self.timer = timer
    }

    /// Forgets the message being received; returns the budget bytes it held, to give back.
    func dropPartialMessage() -> Int {
        defer {
            receiving = []
            reservedPartial = 0
        }
        return reservedPartial
    }
}
