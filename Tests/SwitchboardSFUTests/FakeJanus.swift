import Foundation
import SwitchboardCore

/// A Janus admin API in memory, answering in the shapes of the recorded Janus 1.1.2 answers
/// (Fixtures/janus): VideoRoom rooms with secret, PIN and allowed list, core tokens, sessions
/// holding tokens. Tests read its state after a reconciliation.
final class FakeJanus: HTTPPoster, @unchecked Sendable {
    struct Room: Equatable {
        var secret: String
        var pin: String?
        var description: String
        var publishers: Int
        var allowed: Set<String>
    }

    private let lock = NSLock()
    let url: String
    let adminSecret: String
    private(set) var rooms: [UInt64: Room] = [:]
    private(set) var tokens: Set<String> = []
    /// Janus session id → the token its handle was opened with.
    private(set) var sessions: [UInt64: String] = [:]
    private(set) var verbs: [String] = []
    var down = false

    init(url: String, adminSecret: String) {
        self.url = url
        self.adminSecret = adminSecret
    }

    func setRoom(_ id: UInt64, _ room: Room) { lock.withLock { rooms[id] = room } }
    func addToken(_ token: String) { lock.withLock { _ = tokens.insert(token) } }
    func addSession(_ id: UInt64, token: String) { lock.withLock { sessions[id] = token } }
    func restart() { lock.withLock { rooms = [:]; tokens = []; sessions = [:] } }
    func takeVerbs() -> [String] { lock.withLock { defer { verbs = [] }; return verbs } }
    var state: (rooms: [UInt64: Room], tokens: Set<String>, sessions: [UInt64: String]) { lock.withLock { (rooms, tokens, sessions) } }

    func post(_ url: String, body: [UInt8], timeout: Duration) async throws(HTTPPostError) -> (status: Int, body: [UInt8]) {
        guard !down, url.hasPrefix(self.url) else { throw .failed("connection refused") }
        guard let request = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any], let verb = request["janus"] as? String else {
            return (200, Self.encode(["janus": "error", "error": ["code": 454, "reason": "malformed"]]))
        }
        let path = url.dropFirst(self.url.count).split(separator: "/").compactMap { UInt64($0) }
        let answer = lock.withLock { handle(verb, request, path: path) }
        var reply = answer
        reply["transaction"] = request["transaction"]
        return (200, Self.encode(reply))
    }

    private func handle(_ verb: String, _ request: [String: Any], path: [UInt64]) -> [String: Any] {
        verbs.append(verb == "message_plugin" ? ((request["request"] as? [String: Any])?["request"] as? String ?? "?") : verb)
        guard request["admin_secret"] as? String == adminSecret else {
            return ["janus": "error", "error": ["code": 403, "reason": "Unauthorized request (wrong or missing secret/token)"]]
        }
        switch verb {
        case "list_tokens": return ["janus": "success", "data": ["tokens": tokens.sorted().map { ["token": $0, "allowed_plugins": ["janus.plugin.videoroom"]] }]]
        case "add_token":
            tokens.insert(request["token"] as! String)
            return ["janus": "success", "data": ["plugins": ["janus.plugin.videoroom"]]]
        case "remove_token":
            guard tokens.remove(request["token"] as! String) != nil else { return ["janus": "error", "error": ["code": 490, "reason": "Error removing token"]] }
            return ["janus": "success"]
        case "list_sessions": return ["janus": "success", "sessions": sessions.keys.sorted()]
        case "list_handles": return ["janus": "success", "session_id": path[0], "handles": sessions[path[0]] == nil ? [] : [path[0] + 1]]
        case "handle_info": return ["janus": "success", "info": ["token": sessions[path[0]] ?? ""]]
        case "destroy_session":
            sessions[path[0]] = nil
            return ["janus": "success"]
        case "message_plugin": return ["janus": "success", "response": videoRoom(request["request"] as! [String: Any])]
        default: return ["janus": "error", "error": ["code": 457, "reason": "Unknown request '\(verb)'"]]
        }
    }

    private func videoRoom(_ request: [String: Any]) -> [String: Any] {
        let id = (request["room"] as? NSNumber)?.uint64Value ?? 0
        func error(_ code: Int, _ text: String) -> [String: Any] { ["videoroom": "event", "error_code": code, "error": text] }
        switch request["request"] as? String {
        case "list":
            return ["videoroom": "success", "list": rooms.sorted { $0.key < $1.key }.map { ["room": $0.key, "description": $0.value.description, "num_participants": 0] }]
        case "create":
            guard rooms[id] == nil else { return error(427, "Room \(id) already exists") }
            rooms[id] = Room(
                secret: request["secret"] as? String ?? "", pin: request["pin"] as? String, description: request["description"] as? String ?? "",
                publishers: (request["publishers"] as? NSNumber)?.intValue ?? 3, allowed: Set(request["allowed"] as? [String] ?? []))
            return ["videoroom": "created", "room": id, "permanent": false]
        case "destroy":
            guard let room = rooms[id] else { return error(426, "No such room (\(id))") }
            guard room.secret == request["secret"] as? String else { return error(433, "Unauthorized (wrong secret)") }
            rooms[id] = nil
            return ["videoroom": "destroyed", "room": id, "permanent": false]
        case "allowed":
            guard var room = rooms[id] else { return error(426, "No such room (\(id))") }
            guard room.secret == request["secret"] as? String else { return error(433, "Unauthorized (wrong secret)") }
            let list = Set(request["allowed"] as? [String] ?? [])
            if request["action"] as? String == "add" { room.allowed.formUnion(list) } else { room.allowed.subtract(list) }
            rooms[id] = room
            return ["videoroom": "success", "room": id, "allowed": room.allowed.sorted()]
        default:
            return error(499, "unknown request")
        }
    }

    private static func encode(_ object: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data())
    }
}
