/// The port through which a transport hands events to the application.
///
/// Transports call it from their own threads with batches, in arrival order; an
/// implementation must hop to its own executor and return quickly.
public protocol TransportEventSink: AnyObject, Sendable {
    /// A batch of events, in the order they happened (per connection).
    func transportDidReceive(_ events: [TransportEvent])
}

/// The port through which the application sends frames, closes and HTTP responses.
public protocol OutboundTransport: AnyObject, Sendable {
    /// Queues commands for delivery, in order per connection, and returns the connections whose
    /// outbox was full: their frames were refused and they are being closed (1008).
    /// Commands for connections that are already gone are dropped silently.
    func submit(_ commands: [OutboundCommand]) -> Set<ConnectionID>

    /// Tells the transport the application has handled `events`, a batch it delivered, so it
    /// may read again from sockets it paused. A transport stops reading a socket while the
    /// messages it delivered from it and not yet reported handled pass its inbound limit.
    func processed(_ events: [TransportEvent])
}
