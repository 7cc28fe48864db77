/// What the relay asks its host to do after an event.
public enum RelayEffect: Sendable, Equatable {
    /// Send a text frame. When `receipt` is set and the transport refuses the frame (the
    /// destination's outbox is full), report it back with ``PeerRelay/deliveryFailed(_:on:now:into:)``.
    case send(ConnectionID, [UInt8], receipt: DeliveryReceipt?)
    /// Close the socket with a WebSocket close code, after the frames already sent.
    case close(ConnectionID, CloseCode, reason: String)
}

/// Identifies a relayed message whose failed delivery must be answered with LEAVE.
public struct DeliveryReceipt: Sendable, Equatable {
    /// Who sent the message.
    public let sender: PeerID
    /// The peer it was addressed to.
    public let destination: PeerID

    public init(sender: PeerID, destination: PeerID) {
        self.sender = sender
        self.destination = destination
    }
}
