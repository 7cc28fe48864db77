import Foundation
import SwitchboardCore

extension WebhookSettings {
    /// Reads `webhooks.*`. Every refusal names the key and the endpoint.
    init(reading values: ConfigValues) throws {
        var endpoints: [WebhookEndpoint] = []
        for entry in try values.strings("webhooks.endpoints") {
            let (name, url) = try Self.split(entry, key: "webhooks.endpoints", what: "NAME=URL")
            guard !endpoints.contains(where: { $0.name == name }) else {
                throw SwitchboardError(.invalidConfiguration, "webhooks.endpoints: the endpoint \(name) is named twice")
            }
            try Self.checkURL(url, name: name)
            endpoints.append(WebhookEndpoint(name: name, url: url, secret: ""))
        }
        var secrets: [String: (String, key: String)] = [:]
        for entry in try values.strings("webhooks.secrets") {
            let (name, secret) = try Self.split(entry, key: "webhooks.secrets", what: "NAME=whsec_…", quoteValue: false)
            try Self.add(secret, for: name, key: "webhooks.secrets", to: &secrets)
        }
        for entry in try values.strings("webhooks.secret_files") {
            let (name, path) = try Self.split(entry, key: "webhooks.secret_files", what: "NAME=PATH")
            guard let contents = try? String(contentsOfFile: path, encoding: .utf8),
                let first = contents.split(whereSeparator: \.isNewline).first?.trimmingCharacters(in: .whitespaces), !first.isEmpty
            else { throw SwitchboardError(.invalidConfiguration, "webhooks.secret_files: \(name): cannot read a secret from \(path)") }
            try Self.add(first, for: name, key: "webhooks.secret_files", to: &secrets)
        }
        var filters: [String: Set<WebhookEventType>] = [:]
        for entry in try values.strings("webhooks.events") {
            let (name, list) = try Self.split(entry, key: "webhooks.events", what: "NAME=EVENT,EVENT")
            var events: Set<WebhookEventType> = []
            for item in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                if item == "*" {
                    events.formUnion(WebhookEventType.allCases)
                } else if let type = WebhookEventType(rawValue: item) {
                    events.insert(type)
                } else {
                    throw SwitchboardError(
                        .invalidConfiguration, "webhooks.events: \(name): \(LogText.escape(item, limit: 64)) is not an event (docs/webhooks.md lists them)")
                }
            }
            guard !events.isEmpty else { throw SwitchboardError(.invalidConfiguration, "webhooks.events: \(name): names no event") }
            // Entries of one endpoint add up: in the environment, where commas split the
            // array, "main=call.ring,main=call.missed" names two.
            filters[name, default: []].formUnion(events)
        }
        for name in Set(secrets.keys).union(filters.keys) where !endpoints.contains(where: { $0.name == name }) {
            let key = filters[name] != nil ? "webhooks.events" : secrets[name]!.key
            throw SwitchboardError(.invalidConfiguration, "\(key): \(name) is not in webhooks.endpoints")
        }
        for index in endpoints.indices {
            let name = endpoints[index].name
            guard let secret = secrets[name] else {
                throw SwitchboardError(.invalidConfiguration, "webhooks.secrets: the endpoint \(name) has no secret (webhooks.secrets or webhooks.secret_files)")
            }
            do {
                _ = try WebhookSignature.key(fromSecret: secret.0)
            } catch {
                throw SwitchboardError(.invalidConfiguration, "\(secret.key): \(name): \(error.message)")
            }
            endpoints[index].secret = secret.0
            if let events = filters[name] { endpoints[index].events = events }
        }
        self.init(
            endpoints: endpoints, timeout: try values.milliseconds("webhooks.timeout_ms"),
            retryHorizon: try values.milliseconds("webhooks.retry_horizon_ms"), maxBackoff: try values.milliseconds("webhooks.max_backoff_ms"),
            maxInFlight: try values.int("webhooks.max_in_flight"), rotationGrace: try values.milliseconds("webhooks.rotation_grace_ms"),
            niceness: Int32(try values.int("webhooks.niceness")), workerProcess: try values.bool("webhooks.worker_process"),
            retention: try values.milliseconds("webhooks.retention_ms"))
    }

    /// `NAME=VALUE` with a valid endpoint name.
    private static func split(_ entry: String, key: String, what: String, quoteValue: Bool = true) throws -> (String, String) {
        let shown = quoteValue ? "\"\(LogText.escape(entry, limit: 120))\"" : "an entry"
        guard let equals = entry.firstIndex(of: "=") else {
            throw SwitchboardError(.invalidConfiguration, "\(key): \(shown) is not \(what)")
        }
        let name = String(entry[..<equals])
        let value = String(entry[entry.index(after: equals)...])
        guard CallCID.isValidPart(name) else {
            throw SwitchboardError(.invalidConfiguration, "\(key): \(shown) does not start with an endpoint name (1-64 of A-Z a-z 0-9 _ -)")
        }
        guard !value.isEmpty else { throw SwitchboardError(.invalidConfiguration, "\(key): \(name): the value after = is empty") }
        return (name, value)
    }

    private static func checkURL(_ url: String, name: String) throws {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else {
            throw SwitchboardError(
                .invalidConfiguration, "webhooks.endpoints: \(name): \"\(LogText.escape(url, limit: 120))\" is not an http:// or https:// URL with a host")
        }
        guard components.user == nil, components.password == nil, components.fragment == nil else {
            throw SwitchboardError(.invalidConfiguration, "webhooks.endpoints: \(name): the URL must not hold credentials or a #fragment")
        }
    }

    private static func add(_ secret: String, for name: String, key: String, to secrets: inout [String: (String, key: String)]) throws {
        if let earlier = secrets[name] {
            throw SwitchboardError(.invalidConfiguration, "\(key): \(name) has a secret already (\(earlier.key)); give one only")
        }
        secrets[name] = (secret, key)
    }
}
