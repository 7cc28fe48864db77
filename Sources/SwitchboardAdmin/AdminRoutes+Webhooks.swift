import Foundation
import SwitchboardCore

extension AdminRoutes {
    /// Webhook endpoints (list, rotate a secret, enable after a 410), deliveries (list, retry a
    /// dead one) and users' push devices (list, delete). Changes are audited. When the call
    /// protocol is off every route answers 404.
    static func addWebhookRoutes(to router: inout AdminRouter, context: any AdminContext) {
        router.add("GET", "/v1/webhooks/endpoints") { _ throws(SwitchboardError) in
            json(200, ["endpoints": .array(try webhookPort(context).endpoints().map(\.json))])
        }
        router.add("POST", "/v1/webhooks/endpoints/:name/rotate_secret") { request throws(SwitchboardError) in
            try rotateSecret(request, context)
        }
        router.add("POST", "/v1/webhooks/endpoints/:name/enable") { request throws(SwitchboardError) in
            let name = try endpointName(request)
            try webhookPort(context).enable(endpoint: name)
            let entry = try record(context, request, action: "webhook.endpoint.enable", target: name)
            return json(200, ["enabled": .bool(true), "endpoint": .string(name), "audit_id": auditID(entry)])
        }
        router.add("GET", "/v1/webhooks/deliveries") { request throws(SwitchboardError) in
            let page = try webhookPort(context).listDeliveries(try deliveryQuery(request))
            return json(200, ["deliveries": .array(page.deliveries.map(\.json)), "next_cursor": .optional(page.next)])
        }
        router.add("POST", "/v1/webhooks/endpoints/:name/deliveries/:message/retry") { request throws(SwitchboardError) in
            let name = try endpointName(request)
            guard let message = request.parameters["message"], !message.isEmpty, message.utf8.count <= 128 else {
                throw SwitchboardError(.invalidRequest, "message must be a webhook message id")
            }
            let delivery = try webhookPort(context).retry(messageID: message, endpoint: name)
            let entry = try record(context, request, action: "webhook.delivery.retry", target: name, detail: "message \(message)")
            return json(200, ["delivery": delivery.json, "audit_id": auditID(entry)])
        }
        router.add("GET", "/v1/users/:user/devices") { request throws(SwitchboardError) in
            json(200, ["devices": .array(try webhookPort(context).devices(of: try userParameter(request)).map(\.json))])
        }
        router.add("DELETE", "/v1/users/:user/devices/:device") { request throws(SwitchboardError) in
            let user = try userParameter(request)
            let device = request.parameters["device"] ?? ""
            guard device.utf8.count == 24, device.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
                throw SwitchboardError(.invalidRequest, "device must be a device_id (24 lowercase hex digits)")
            }
            guard try webhookPort(context).deleteDevice(of: user, id: device) else {
                throw SwitchboardError(.notFound, "user \(user) has no device \(device)")
            }
            let entry = try record(context, request, action: "device.delete", target: user.rawValue, detail: "device \(device)")
            return json(200, ["deleted": .bool(true), "device_id": .string(device), "audit_id": auditID(entry)])
        }
    }

    /// The webhook port, or 404 when the call protocol is off.
    static func webhookPort(_ context: any AdminContext) throws(SwitchboardError) -> any WebhookAdministration {
        guard let webhooks = context.webhooks else { throw SwitchboardError(.notFound, "the call protocol is off") }
        return webhooks
    }

    static func endpointName(_ request: AdminRequest) throws(SwitchboardError) -> String {
        guard let name = request.parameters["name"], CallCID.isValidPart(name) else { throw SwitchboardError(.invalidRequest, "name must be an endpoint name: 1–64 letters, digits, '_' or '-'") }
        return name
    }

    static func userParameter(_ request: AdminRequest) throws(SwitchboardError) -> UserID {
        guard let user = UserID(request.parameters["user"] ?? "") else {
            throw SwitchboardError(.invalidRequest, "user must be a user id of 1–128 bytes without control characters")
        }
        return user
    }

    /// `POST /v1/webhooks/endpoints/{name}/rotate_secret {"grace_ms"?}`: the new secret, shown once.
    static func rotateSecret(_ request: AdminRequest, _ context: any AdminContext) throws(SwitchboardError) -> HTTPResponse {
        let name = try endpointName(request)
        var grace: Duration?
        if !request.http.body.isEmpty {
            guard let body = JSONValue.parse(request.http.body), body.isObject else {
                throw SwitchboardError(.invalidRequest, "the body must be a JSON object: {\"grace_ms\": milliseconds}")
            }
            if let value = body["grace_ms"], value != .null {
                guard let number = value.doubleValue, number >= 0, number <= 2_592_000_000, number == number.rounded() else {
                    throw SwitchboardError(.invalidRequest, "grace_ms must be an integer from 0 to 2592000000")
                }
                grace = .milliseconds(Int64(number))
            }
        }
        let rotated = try webhookPort(context).rotateSecret(endpoint: name, grace: grace)
        let entry = try record(context, request, action: "webhook.endpoint.rotate_secret", target: name)
        return json(200, [
            "endpoint": .string(name), "secret": .string(rotated.secret), "previous_secret_until": .time(rotated.previousUntil),
            "audit_id": auditID(entry),
        ])
    }

    /// `GET /v1/webhooks/deliveries`'s filters; a bad value is `invalid_request` naming it.
    static func deliveryQuery(_ request: AdminRequest) throws(SwitchboardError) -> WebhookDeliveryQuery {
        let query = request.http.query
        var result = WebhookDeliveryQuery(limit: try request.pageLimit())
        if let status = query["status"] {
            guard let parsed = WebhookDeliveryStatus(rawValue: status) else {
                throw SwitchboardError(.invalidRequest, "status must be pending, delivered or dead")
            }
            result.status = parsed
        }
        if let endpoint = query["endpoint"] {
            guard CallCID.isValidPart(endpoint) else {
                throw SwitchboardError(.invalidRequest, "endpoint must be an endpoint name")
            }
            result.endpoint = endpoint
        }
        if let cid = query["cid"] {
            guard let parsed = CallCID(cid: cid) else { throw SwitchboardError(.invalidRequest, "cid must be type:id") }
            result.cid = parsed
        }
        if let cursor = query["cursor"], !cursor.isEmpty { result.cursor = cursor }
        return result
    }
}
