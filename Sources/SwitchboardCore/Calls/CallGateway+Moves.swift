import Foundation

/// Client connections moving between nodes (ADR 0012, step 3; ConnectionHolding.swift): a
/// client whose node died, or that reached another node, resumes there; the node that held its
/// connection lets it go without ending its sessions, and the nodes running calls end the
/// sessions of connections no live node holds.
extension CallGateway {
    /// Whether a resume names a connection this node holds (else the host looks for it in the
    /// store, ``adopt(_:now:)``).
    public func holdsResume(_ resume: ResumeRequest, user: UserID) -> Bool {
        resumable(resume, user: user) != nil
    }

    /// Connections another node took over (their clients resumed there): let go, their socket
    /// here closed (4009, as a resume on another socket), their sessions untouched. Nothing to
    /// commit: the row is the other node's now.
    public mutating func connectionsMoved(_ connections: [ClientConnectionID], into output: inout CallGatewayOutput) {
        for id in connections {
            remoteSessions[id] = nil
            guard let client = clients.removeValue(forKey: id) else { continue }
            userClients[client.user]?.remove(id)
            if userClients[client.user]?.isEmpty == true { userClients[client.user] = nil }
            guard let socket = client.socket else { continue }
            sockets[socket] = nil
            output.commands.append(.close(socket, .replaced, reason: "resumed on another node"))
        }
    }

    /// The client connections of this node's active sessions that it does not hold: the host
    /// asks the store which of them no live node holds any more (``CallStore/lostConnections(_:after:)``).
    public var sessionsHeldElsewhere: Set<ClientConnectionID> {
        Set(engine.connectionSessions.keys.filter { clients[$0] == nil })
    }
}
