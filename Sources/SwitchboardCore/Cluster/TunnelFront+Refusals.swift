// A relaying node's refusals: while it takes the lead, and while it drains.

extension TunnelFront {
    /// What a node that relays to nobody (it is taking the lead) does with events: sockets are
    /// closed 1013, requests answered 503.
    public static func refusingAll(_ events: [TransportEvent]) -> Output {
        var front = TunnelFront()
        return front.received(events, now: MonotonicTime(nanoseconds: 0))
    }
}

extension TunnelFront {
    /// A draining front: new sockets are closed with 1001; the rest is relayed as usual.
    public static func draining(_ events: [TransportEvent], into front: inout TunnelFront, now: MonotonicTime) -> Output {
        var refused: [OutboundCommand] = []
        var kept: [TransportEvent] = []
        var dropped: [TransportEvent] = []
        var closing = Set<ConnectionID>()
        for event in events {
            switch event {
            case .opened(let id, _):
                closing.insert(id)
                refused.append(.close(id, .goingAway, reason: "server is draining"))
            case .message(let id, _, _) where closing.contains(id):
                dropped.append(event)
            case .closed(let id) where closing.contains(id):
                continue
            default:
                kept.append(event)
            }
        }
        var output = front.received(kept, now: now)
        output.local = refused + output.local
        output.handled = dropped + output.handled
        return output
    }
}
