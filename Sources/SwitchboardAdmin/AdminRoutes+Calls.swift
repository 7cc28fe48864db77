import Foundation
import SwitchboardCore

extension AdminRoutes {
    /// The call-protocol routes: call history, one call's detail, ending a call, removing a
    /// participant session, and the connected call-protocol clients.
    ///
    /// Bodies are the call layer's JSON views (``CallRecord/adminJSON``,
    /// ``CallDetail/adminJSON(sfu:)``, ``ConnectionView/json``): times are milliseconds since
    /// 1970, as on the call protocol. When the call protocol is off every route answers 404.
    static func addCallRoutes(to router: inout AdminRouter, context: any AdminContext) {
        router.add("GET", "/v1/calls") { request throws(SwitchboardError) in
            let page = try callPort(context).listCalls(try callQuery(request))
            return json(200, ["calls": .array(page.calls.map(\.adminJSON)), "next_cursor": .optional(page.next)])
        }
        router.add("GET", "/v1/calls/:type/:id") { request throws(SwitchboardError) in try callDetail(request, context) }
        router.add("POST", "/v1/calls/:type/:id/end") { request throws(SwitchboardError) in try endCall(request, context) }
        router.add("DELETE", "/v1/calls/:type/:id/sessions/:session") { request throws(SwitchboardError) in
            try removeSession(request, context)
        }
        router.add("GET", "/v1/connections") { _ throws(SwitchboardError) in
            json(200, ["connections": .array(try callPort(context).connections().map(\.json))])
        }
    }

    /// The latest time `created_from` / `created_before` take: 9999-12-31T23:59:59.999Z.
    static let latestCallTime: Int64 = 253_402_300_799_999

    /// The call port, or 404 when the call protocol is off.
    static func callPort(_ context: any AdminContext) throws(SwitchboardError) -> any CallAdministration {
        guard let calls = context.calls else { throw SwitchboardError(.notFound, "the call protocol is off") }
        return calls
    }

    /// A JSON object body; keys sorted, as every admin body.
    static func json(_ status: Int, _ fields: [String: JSONValue]) -> HTTPResponse {
        .json(status, JSONValue.object(fields).bytes)
    }

    /// `GET /v1/calls`'s filters; a bad value is `invalid_request` naming its parameter.
    static func callQuery(_ request: AdminRequest) throws(SwitchboardError) -> CallQuery {
        let query = request.http.query
        var result = CallQuery(limit: try request.pageLimit())
        if let state = query["state"] {
            guard let parsed = CallQuery.State(rawValue: state) else { throw SwitchboardError(.invalidRequest, "state must be live or ended") }
            result.state = parsed
        }
        if let type = query["type"] {
            guard CallCID(type: type, id: "x") != nil else {
                throw SwitchboardError(.invalidRequest, "type must be 1–64 letters, digits, '_' or '-'")
            }
            result.type = type
        }
        if let member = query["member"] {
            guard let user = UserID(member) else {
                throw SwitchboardError(.invalidRequest, "member must be a user id of 1–128 bytes without control characters")
            }
            result.member = user
        }
        result.createdFrom = try epochMilliseconds(request, "created_from")
        result.createdBefore = try epochMilliseconds(request, "created_before")
        if let cursor = query["cursor"], !cursor.isEmpty { result.cursor = cursor }
        return result
    }

    /// An optional query parameter holding milliseconds since 1970.
    static func epochMilliseconds(_ request: AdminRequest, _ name: String) throws(SwitchboardError) -> Date? {
        guard let text = request.http.query[name] else { return nil }
        guard let value = Int64(text), (0...latestCallTime).contains(value) else {
            throw SwitchboardError(.invalidRequest, "\(name) must be milliseconds since 1970, from 0 to \(latestCallTime)")
        }
        return Date(timeIntervalSince1970: Double(value) / 1000)
    }

    /// The `{type}/{id}` of the path as a cid, or `invalid_request`.
    static func callCID(_ request: AdminRequest) throws(SwitchboardError) -> CallCID {
        guard let type = request.parameters["type"], let id = request.parameters["id"], let cid = CallCID(type: type, id: id) else {
            throw SwitchboardError(.invalidRequest, "type and id must each be 1–64 letters, digits, '_' or '-'")
        }
        return cid
    }

    /// The `{session}` of the path, or `invalid_request`.
    static func sessionID(_ request: AdminRequest) throws(SwitchboardError) -> SessionID {
        guard let session = SessionID(sent: request.parameters["session"] ?? "") else {
            throw SwitchboardError(.invalidRequest, "session must be \(SessionID.rule)")
        }
        return session
    }

    /// `GET /v1/calls/{type}/{id}`: members, ring states, sessions, SFU and recent events.
    static func callDetail(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        let calls = try callPort(context)
        let cid = try callCID(request)
        let events = try request.integer("events", in: 0...1000, default: 100)
        guard let found = try calls.callDetail(cid, eventLimit: events) else {
            throw SwitchboardError(.callNotFound, "no call \(cid)")
        }
        return .json(200, found.detail.adminJSON(sfu: found.sfu).bytes)
    }

    /// `POST /v1/calls/{type}/{id}/end`: ends a live call (reason `admin`); audited.
    static func endCall(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        let calls = try callPort(context)
        let cid = try callCID(request)
        do {
            try calls.endCall(cid)
        } catch where error.code == .callNotFound {
            // Calls that ended before a restart are only in the store: still a conflict.
            guard let stored = try calls.callDetail(cid, eventLimit: 0), !stored.detail.call.isLive else { throw error }
            throw SwitchboardError(.callEnded, "call \(cid) has ended")
        }
        let entry = try record(context, request, action: "call.end", target: cid.cid)
        return json(200, ["ended": .bool(true), "cid": .string(cid.cid), "audit_id": auditID(entry)])
    }

    /// `DELETE /v1/calls/{type}/{id}/sessions/{session}`: removes a participant session
    /// (reason `kicked`); audited with the cid as target and the session as detail.
    static func removeSession(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        let calls = try callPort(context)
        let cid = try callCID(request)
        let session = try sessionID(request)
        try calls.removeSession(session, from: cid)
        let entry = try record(context, request, action: "call.session.remove", target: cid.cid, detail: "session \(session)")
        return json(200, ["removed": .bool(true), "cid": .string(cid.cid), "session_id": .string(session.rawValue), "audit_id": auditID(entry)])
    }

    /// An audit entry's id as JSON (`null` only if the log did not number it).
    static func auditID(_ entry: AuditEntry) -> JSONValue {
        entry.id.map { .number(Double($0)) } ?? .null
    }
}
