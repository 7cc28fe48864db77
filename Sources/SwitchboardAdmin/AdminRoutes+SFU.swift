import Foundation
import SwitchboardCore

extension AdminRoutes {
    /// The location table and placement routes.
    static func addSFURoutes(to router: inout AdminRouter, context: any AdminContext) {
        let sfus = context.sfus
        router.add("GET", "/v1/sfus") { request throws(SwitchboardError) in try listSFUs(request, sfus) }
        router.add("POST", "/v1/sfus") { request throws(SwitchboardError) in
            let view = try sfus.create(try request.decode(SFUDefinition.self))
            _ = try record(context, request, action: "sfu.create", target: view.id)
            return AdminJSON.response(201, view)
        }
        router.add("GET", "/v1/sfus/:id") { request throws(SwitchboardError) in
            let id = try sfuID(request)
            guard let view = sfus.get(id) else { throw SwitchboardError(.notFound, "no SFU \(id)") }
            return AdminJSON.response(200, view)
        }
        router.add("PUT", "/v1/sfus/:id") { request throws(SwitchboardError) in
            let view = try sfus.replace(try sfuID(request), with: try request.decode(SFUDefinition.self))
            _ = try record(context, request, action: "sfu.replace", target: view.id)
            return AdminJSON.response(200, view)
        }
        router.add("DELETE", "/v1/sfus/:id") { request throws(SwitchboardError) in try deleteSFU(request, context) }
        router.add("POST", "/v1/sfus/:id/drain") { request throws(SwitchboardError) in
            let view = try sfus.drain(try sfuID(request))
            _ = try record(context, request, action: "sfu.drain", target: view.id)
            return AdminJSON.response(200, view)
        }
        router.add("POST", "/v1/sfus/:id/heartbeat", public: true) { request throws(SwitchboardError) in
            struct Report: Decodable { let load: Int }
            let report = try request.decode(Report.self)
            let view = try sfus.heartbeat(try sfuID(request), load: report.load, credential: request.bearer, isAdmin: request.isAdmin)
            return AdminJSON.response(200, view)
        }
        router.add("POST", "/v1/placement/explain") { request throws(SwitchboardError) in
            struct Query: Decodable {
                let callId: String?
                let participants: [LocationHint]?
                enum CodingKeys: String, CodingKey {
                    case callId = "call_id"
                    case participants
                }
            }
            let query = try request.decode(Query.self)
            guard query.callId != nil || query.participants != nil else {
                throw SwitchboardError(.invalidRequest, "give call_id or participants")
            }
            guard (query.participants?.count ?? 0) <= 100 else { throw SwitchboardError(.invalidRequest, "at most 100 participants") }
            return AdminJSON.response(200, try sfus.explain(callID: query.callId, participants: query.participants))
        }
    }

    static func sfuID(_ request: AdminRequest) throws(SwitchboardError) -> SFUID {
        guard let raw = request.parameters["id"], let id = SFUID(raw) else { throw SwitchboardError(.invalidRequest, "not an SFU id") }
        return id
    }

    static func listSFUs(_ request: AdminRequest, _ sfus: any SFUAdministration) throws(SwitchboardError) -> HTTPResponse {
        let limit = try request.pageLimit()
        let all = sfus.list()
        let after = request.http.query["cursor"].map { cursor in all.filter { $0.id > cursor } } ?? all
        let page = Array(after.prefix(limit))
        return AdminJSON.response(200, Page(key: "sfus", items: page, nextCursor: after.count > limit ? page.last?.id : nil))
    }

    static func deleteSFU(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        let id = try sfuID(request)
        let moved = try context.sfus.delete(id)
        let entry = try record(context, request, action: "sfu.delete", target: id.rawValue, detail: "\(moved.count) calls moved")
        struct Move: Encodable {
            let callId: String
            let from: String
            let to: String?
        }
        struct Body: Encodable {
            let deleted: String
            let reassigned: [Move]
            let auditId: Int64?
        }
        let moves = moved.map { Move(callId: $0.callID, from: $0.from.rawValue, to: $0.to?.rawValue) }
        return AdminJSON.response(200, Body(deleted: id.rawValue, reassigned: moves, auditId: entry.id))
    }
}
