import SwitchboardCore

/// A VideoRoom room as Janus lists it.
public struct JanusRoomListing: Sendable, Equatable, Decodable {
    public let room: UInt64
    public let description: String?
    public let numParticipants: Int?

    enum CodingKeys: String, CodingKey {
        case room, description
        case numParticipants = "num_participants"
    }
}

/// VideoRoom requests through the admin API (`message_plugin`, no session needed) and the
/// core's token requests. Janus answers a plugin's errors inside a success envelope
/// (`response.error_code`); those are ``JanusError/refused(code:reason:)`` too.
extension JanusAdminClient {
    static let videoRoom = "janus.plugin.videoroom"

    /// VideoRoom error codes the provisioning treats as "already so".
    public enum VideoRoomCode {
        public static let noSuchRoom = 426
        public static let roomExists = 427
    }

    /// Every room on the server (rooms created with `is_private: false`).
    public func listRooms(_ access: JanusAccess, secret: String) async throws(JanusError) -> [JanusRoomListing] {
        struct Listing: Decodable { let list: [JanusRoomListing] }
        let listing: Listing = try await plugin(access, secret: secret, ["request": .string("list")])
        return listing.list
    }

    /// Creates a room that only the `allowed` tokens may publish in and the PIN holders may
    /// enter. An existing room with this id counts as created.
    public func createRoom(
        _ access: JanusAccess, secret: String, room: UInt64, roomSecret: String, pin: String, publishers: Int, allowed: [String],
        description: String
    ) async throws(JanusError) {
        do {
            let _: Ignored = try await plugin(access, secret: secret, [
                "request": .string("create"), "room": .number(Double(room)), "secret": .string(roomSecret), "pin": .string(pin),
                "publishers": .number(Double(publishers)), "permanent": .bool(false), "is_private": .bool(false),
                "description": .string(description), "allowed": .array(allowed.map { .string($0) }),
            ])
        } catch .refused(let code, _) where code == VideoRoomCode.roomExists {
            return
        }
    }

    /// Destroys a room (its participants are told and leave). A room that is gone counts as destroyed.
    public func destroyRoom(_ access: JanusAccess, secret: String, room: UInt64, roomSecret: String) async throws(JanusError) {
        do {
            let _: Ignored = try await plugin(access, secret: secret, [
                "request": .string("destroy"), "room": .number(Double(room)), "secret": .string(roomSecret), "permanent": .bool(false),
            ])
        } catch .refused(let code, _) where code == VideoRoomCode.noSuchRoom {
            return
        }
    }

    /// Adds or removes tokens of a room's `allowed` list; returns the list after the change.
    @discardableResult
    public func changeAllowed(
        _ access: JanusAccess, secret: String, room: UInt64, roomSecret: String, add: Bool, tokens: [String]
    ) async throws(JanusError) -> [String] {
        struct Allowed: Decodable { let allowed: [String]? }
        let answer: Allowed = try await plugin(access, secret: secret, [
            "request": .string("allowed"), "room": .number(Double(room)), "secret": .string(roomSecret),
            "action": .string(add ? "add" : "remove"), "allowed": .array(tokens.map { .string($0) }),
        ])
        return answer.allowed ?? []
    }

    /// The tokens Janus accepts (core `token_auth`).
    public func listTokens(_ access: JanusAccess, secret: String) async throws(JanusError) -> [String] {
        struct Tokens: Decodable {
            struct Data: Decodable {
                struct Token: Decodable { let token: String }
                let tokens: [Token]
            }
            let data: Data
        }
        let answer: Tokens = try await request(access, secret: secret, verb: "list_tokens")
        return answer.data.tokens.map(\.token)
    }

    /// Lets `token` create sessions and use the VideoRoom plugin (adding an existing token is a no-op).
    public func addToken(_ access: JanusAccess, secret: String, token: String) async throws(JanusError) {
        let _: Ignored = try await request(
            access, secret: secret, verb: "add_token", fields: ["token": .string(token), "plugins": .array([.string(Self.videoRoom)])])
    }

    /// Stops accepting `token`: the next request of every session using it is refused.
    /// A token Janus does not hold counts as removed (Janus answers its generic 490 then).
    public func removeToken(_ access: JanusAccess, secret: String, token: String) async throws(JanusError) {
        do {
            let _: Ignored = try await request(access, secret: secret, verb: "remove_token", fields: ["token": .string(token)])
        } catch .refused(let code, _) where code == 490 {
            return
        }
    }

    /// Sends a VideoRoom request through `message_plugin` and decodes its `response`.
    func plugin<T: Decodable>(_ access: JanusAccess, secret: String, _ body: [String: JSONValue]) async throws(JanusError) -> T {
        let answer: PluginAnswer<T> = try await request(
            access, secret: secret, verb: "message_plugin", fields: ["plugin": .string(Self.videoRoom), "request": .object(body)])
        if let code = answer.response.errorCode {
            throw .refused(code: code, reason: answer.response.error ?? "VideoRoom error")
        }
        guard let value = answer.response.value else { throw .failed("the VideoRoom answer lacks the expected fields") }
        return value
    }
}

/// The admin API's answer to `message_plugin`.
struct PluginAnswer<T: Decodable>: Decodable {
    let response: PluginResponse<T>
}

/// A VideoRoom `response`: an error (`error_code`, `error`) or the value asked for.
struct PluginResponse<T: Decodable>: Decodable {
    let errorCode: Int?
    let error: String?
    let value: T?

    enum CodingKeys: String, CodingKey {
        case errorCode = "error_code"
        case error
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        errorCode = try container.decodeIfPresent(Int.self, forKey: .errorCode)
        error = try container.decodeIfPresent(String.self, forKey: .error)
        value = errorCode == nil ? try? T(from: decoder) : nil
    }
}
