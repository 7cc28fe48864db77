import Foundation
import SwitchboardCore

/// The admin API's routes, each a plain function of the request and an ``AdminContext``.
public enum AdminRoutes {
    /// The router with every route registered.
    public static func router(configuration: AdminConfiguration, context: any AdminContext) -> AdminRouter {
        // With token auth and no token known, nothing authenticates (fail closed); the daemon
        // always has one (configured or generated) by the time it builds the router.
        var router = AdminRouter(
            token: configuration.auth == .none ? nil : (configuration.token ?? ""),
            policy: AdminRequestPolicy(allowedHosts: configuration.allowedHosts))
        router.add("GET", "/healthz", public: true) { _ in AdminJSON.response(200, ["status": "ok"]) }
        router.add("GET", "/readyz") { _ in readiness(context) }
        router.add("GET", "/metrics") { _ in metrics(context) }
        router.add("GET", "/v1/stats") { _ in AdminJSON.response(200, context.stats()) }
        router.add("GET", "/v1/peers") { request throws(SwitchboardError) in try peers(request, context) }
        router.add("DELETE", "/v1/peers/:id") { request throws(SwitchboardError) in try disconnect(request, context) }
        router.add("GET", "/v1/log-level") { _ in AdminJSON.response(200, LogLevelBody(level: context.logLevel())) }
        router.add("PUT", "/v1/log-level") { request throws(SwitchboardError) in try setLogLevel(request, context) }
        router.add("POST", "/v1/drain") { request throws(SwitchboardError) in try drain(request, context) }
        router.add("GET", "/v1/nodes") { _ throws(SwitchboardError) in try nodes(context) }
        router.add("GET", "/v1/audit") { request throws(SwitchboardError) in try audit(request, context) }
        addSFURoutes(to: &router, context: context)
        addCallRoutes(to: &router, context: context)
        addWebhookRoutes(to: &router, context: context)
        router.add("POST", "/v1/tokens") { request throws(SwitchboardError) in try mintToken(request, context) }
        return router
    }

    struct LogLevelBody: Codable { var level: String }

    static func readiness(_ context: any AdminContext) -> HTTPResponse {
        readinessResponse(context.readiness())
    }

    static func readinessResponse(_ readiness: Readiness) -> HTTPResponse {
        struct Body: Encodable {
            let ready: Bool
            let checks: Readiness
        }
        return AdminJSON.response(readiness.ready ? 200 : 503, Body(ready: readiness.ready, checks: readiness))
    }

    static func metrics(_ context: any AdminContext) -> HTTPResponse {
        metricsResponse(context.metricsText())
    }

    static func metricsResponse(_ text: String) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(text.utf8))
    }

    /// The routes a daemon that relays its clients to the leading daemon answers itself, about
    /// itself (ADR 0012): `/healthz`, `/readyz`, `/metrics` and `POST /v1/drain` (this daemon
    /// takes no new sockets; audited in the shared log), behind the same token. Its other admin
    /// requests are relayed to the leader's full API.
    public static func relayRouter(
        configuration: AdminConfiguration, readiness: @escaping @Sendable () -> Readiness, metrics: @escaping @Sendable () -> String,
        drain: @escaping @Sendable () -> Void, auditLog: any AuditLog, now: @escaping @Sendable () -> Date
    ) -> AdminRouter {
        var router = AdminRouter(
            token: configuration.auth == .none ? nil : (configuration.token ?? ""),
            policy: AdminRequestPolicy(allowedHosts: configuration.allowedHosts))
        router.add("GET", "/healthz", public: true) { _ in AdminJSON.response(200, ["status": "ok"]) }
        router.add("GET", "/readyz") { _ in readinessResponse(readiness()) }
        router.add("GET", "/metrics") { _ in metricsResponse(metrics()) }
        router.add("POST", "/v1/drain") { request throws(SwitchboardError) in
            drain()
            let entry: AuditEntry
            do {
                entry = try auditLog.append(AuditEntry(at: now(), actor: request.actor, action: "drain", target: "", detail: "a relaying node"))
            } catch {
                throw SwitchboardError(.unavailable, "the audit log cannot be written: \(error)")
            }
            return AdminJSON.response(202, DrainBody(draining: true, auditId: entry.id))
        }
        return router
    }

    struct DrainBody: Encodable {
        let draining: Bool
        let auditId: Int64?
    }

    static func peers(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        let limit = try request.pageLimit()
        let cursor = request.http.query["cursor"]
        let all = context.peers()
        let after = cursor.map { cursor in all.filter { $0.rawValue > cursor } } ?? all
        let page = Array(after.prefix(limit))
        struct Peer: Encodable { let id: String }
        let next = after.count > limit ? page.last?.rawValue : nil
        return AdminJSON.response(200, Page(key: "peers", items: page.map { Peer(id: $0.rawValue) }, nextCursor: next))
    }

    static func disconnect(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        guard let raw = request.parameters["id"], let id = PeerID(raw) else {
            throw SwitchboardError(.invalidRequest, "not a peer id")
        }
        guard context.disconnectPeer(id) else { throw SwitchboardError(.notFound, "peer \(raw) is not connected") }
        let entry = try record(context, request, action: "peer.disconnect", target: raw)
        struct Body: Encodable {
            let disconnected: String
            let auditId: Int64?
        }
        return AdminJSON.response(200, Body(disconnected: raw, auditId: entry.id))
    }

    /// Serialises changes that must stay in step with their audit entry.
    private static let mutations = NSLock()

    static func setLogLevel(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        let body = try request.decode(LogLevelBody.self)
        mutations.lock()
        defer { mutations.unlock() }
        let previous = context.logLevel()
        guard context.setLogLevel(body.level) else {
            throw SwitchboardError(.invalidRequest, "level must be one of trace, debug, info, notice, warning, error, critical")
        }
        let entry: AuditEntry
        do {
            entry = try record(context, request, action: "log_level.set", target: body.level)
        } catch {
            _ = context.setLogLevel(previous)
            throw error
        }
        struct Body: Encodable {
            let level: String
            let auditId: Int64?
        }
        return AdminJSON.response(200, Body(level: body.level, auditId: entry.id))
    }

    static func drain(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        context.beginDrain()
        let entry = try record(context, request, action: "drain")
        return AdminJSON.response(202, DrainBody(draining: true, auditId: entry.id))
    }

    static func audit(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        let limit = try request.pageLimit()
        let before = try request.http.query["cursor"].map { text throws(SwitchboardError) -> Int64 in
            guard let value = Int64(text) else { throw SwitchboardError(.invalidRequest, "cursor must be an entry id") }
            return value
        }
        let entries: [AuditEntry]
        do {
            entries = try context.auditLog.entries(limit: limit + 1, before: before)
        } catch {
            throw SwitchboardError(.unavailable, "the audit log cannot be read: \(error)")
        }
        let page = Array(entries.prefix(limit))
        let next = entries.count > limit ? page.last?.id.map(String.init) : nil
        return AdminJSON.response(200, Page(key: "entries", items: page, nextCursor: next))
    }

    static func mintToken(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        struct Body: Decodable {
            let userId: String
            let ttlSeconds: Int?
            let callCids: [String]?
            let role: String?
            enum CodingKeys: String, CodingKey {
                case userId = "user_id", ttlSeconds = "ttl_seconds", callCids = "call_cids", role
            }
        }
        let body = try request.decode(Body.self)
        let minted = try context.mintToken(
            TokenRequest(userID: body.userId, ttl: .seconds(body.ttlSeconds ?? 3600), callCIDs: body.callCids, role: body.role))
        _ = try record(context, request, action: "token.mint", target: body.userId)
        return minted201(minted)
    }

    /// `201` with a minted token: `{"expires_at", "token", "user_id"}` (the admin API's
    /// `POST /v1/tokens` and the development route `POST /dev/token` alike).
    static func minted201(_ minted: (token: String, claims: UserToken)) -> HTTPResponse {
        struct Reply: Encodable {
            let token: String
            let userId: String
            let expiresAt: Date
        }
        return AdminJSON.response(201, Reply(token: minted.token, userId: minted.claims.userID, expiresAt: minted.claims.expiresAt))
    }

    /// Commits an audit entry; the action is acknowledged only after this returns.
    static func record(
        _ context: any AdminContext, _ request: AdminRequest, action: String, target: String = "", detail: String = ""
    ) throws(SwitchboardError) -> AuditEntry {
        do {
            return try context.auditLog.append(AuditEntry(at: context.now(), actor: request.actor, action: action, target: target, detail: detail))
        } catch {
            throw SwitchboardError(.unavailable, "the audit log cannot be written: \(error)")
        }
    }
}
