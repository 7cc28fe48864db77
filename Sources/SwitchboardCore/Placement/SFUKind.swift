import Foundation

/// How Switchboard knows an SFU is alive and how loaded it is.
public enum SFUKind: String, Sendable, Equatable, Codable, CaseIterable {
    /// The SFU (or a sidecar) posts `POST /v1/sfus/{id}/heartbeat` with its load.
    case heartbeat
    /// A Janus server: Switchboard polls its admin API for health and load.
    case janus
}

/// Where a secret is read from: never the secret itself, so the store and the admin API hold
/// only this reference.
public enum SecretSource: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// An environment variable of the daemon.
    case environment(String)
    /// A file (its content, without a trailing newline).
    case file(String)

    /// `env:NAME` or `file:/path`, as stored and shown.
    public var description: String {
        switch self {
        case .environment(let name): "env:\(name)"
        case .file(let path): "file:\(path)"
        }
    }

    /// Parses ``description``'s form; `nil` for anything else or an invalid name or path.
    public init?(stored text: String) {
        if text.hasPrefix("env:") {
            self.init(environment: String(text.dropFirst(4)))
        } else if text.hasPrefix("file:") {
            self.init(file: String(text.dropFirst(5)))
        } else {
            return nil
        }
    }

    /// An environment variable name: 1–128 of `A–Z a–z 0–9 _`, not starting with a digit.
    public init?(environment name: String) {
        let bytes = name.utf8
        guard (1...128).contains(bytes.count), let first = bytes.first, !(first >= 48 && first <= 57),
            bytes.allSatisfy({ $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") })
        else { return nil }
        self = .environment(name)
    }

    /// An absolute path of at most 4,096 bytes with no NUL or control character.
    public init?(file path: String) {
        let bytes = path.utf8
        guard (2...4096).contains(bytes.count), bytes.first == UInt8(ascii: "/"), !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F })
        else { return nil }
        self = .file(path)
    }
}

/// What Switchboard needs to reach a Janus server's admin API.
public struct JanusAccess: Sendable, Equatable, Hashable {
    /// The admin API's HTTP endpoint, e.g. `http://10.0.0.5:7088/admin`.
    public var adminURL: String
    /// Where the admin secret is read from.
    public var adminSecret: SecretSource

    public init(adminURL: String, adminSecret: SecretSource) {
        self.adminURL = adminURL
        self.adminSecret = adminSecret
    }
}

/// The `janus` object of an SFU definition: the admin URL and where its secret is.
public struct JanusDefinition: Sendable, Equatable, Codable {
    public var adminURL: String
    public var adminSecretEnv: String?
    public var adminSecretFile: String?

    public init(adminURL: String, adminSecretEnv: String? = nil, adminSecretFile: String? = nil) {
        self.adminURL = adminURL
        self.adminSecretEnv = adminSecretEnv
        self.adminSecretFile = adminSecretFile
    }

    enum CodingKeys: String, CodingKey {
        case adminURL = "admin_url"
        case adminSecretEnv = "admin_secret_env"
        case adminSecretFile = "admin_secret_file"
    }

    /// The validated access: an http(s) admin URL and exactly one secret source. The one rule
    /// for definitions from the admin API and from the seed file.
    public func access() throws(SwitchboardError) -> JanusAccess {
        guard URLText.isHTTP(adminURL) else {
            throw SwitchboardError(.invalidRequest, "janus.admin_url must be an http:// or https:// URL")
        }
        switch (adminSecretEnv, adminSecretFile) {
        case (let name?, nil):
            guard let source = SecretSource(environment: name) else {
                throw SwitchboardError(.invalidRequest, "janus.admin_secret_env must be an environment variable name")
            }
            return JanusAccess(adminURL: adminURL, adminSecret: source)
        case (nil, let path?):
            guard let source = SecretSource(file: path) else {
                throw SwitchboardError(.invalidRequest, "janus.admin_secret_file must be an absolute path")
            }
            return JanusAccess(adminURL: adminURL, adminSecret: source)
        default:
            throw SwitchboardError(.invalidRequest, "janus needs exactly one of admin_secret_env and admin_secret_file")
        }
    }
}

/// URL checks shared by SFU definitions: a scheme, at most 2,048 bytes, no space or control.
public enum URLText {
    public static func isWebSocket(_ text: String) -> Bool { hasScheme(text, ["ws://", "wss://"]) }
    public static func isHTTP(_ text: String) -> Bool { hasScheme(text, ["http://", "https://"]) }

    static func hasScheme(_ text: String, _ schemes: [String]) -> Bool {
        guard schemes.contains(where: { text.hasPrefix($0) && text.utf8.count > $0.utf8.count }), text.utf8.count <= 2048 else { return false }
        return !text.unicodeScalars.contains { $0.value <= 0x20 || ($0.value >= 0x7F && $0.value < 0xA0) }
    }
}

extension SecretSource: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let source = SecretSource(stored: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not env:NAME or file:/path"))
        }
        self = source
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension JanusAccess: Codable {}

/// How one poll of a pulled SFU ended.
public struct SFUPollResult: Sendable, Equatable {
    public enum Outcome: String, Sendable, Equatable, CaseIterable {
        /// The SFU answered; its load is known.
        case ok
        /// It answered with an error (a wrong admin secret, a refused request).
        case refused
        /// No usable answer: connection refused, reset, an HTTP error status, a malformed body.
        case failed
        /// No answer within the poll timeout.
        case timeout
        /// The admin secret could not be read from its source.
        case noSecret = "no_secret"
    }

    public var outcome: Outcome
    /// Sessions in use, when ``outcome`` is `ok`.
    public var load: Int?
    /// When the poll finished (wall clock).
    public var at: Date
    /// What went wrong, for the log (never a secret).
    public var detail: String?

    public init(outcome: Outcome, load: Int? = nil, at: Date, detail: String? = nil) {
        self.outcome = outcome
        self.load = load
        self.at = at
        self.detail = detail
    }
}

/// A pulled SFU the poller asks about: its id, kind-specific access, and nothing else.
public struct SFUPollTarget: Sendable, Equatable {
    public var id: SFUID
    public var janus: JanusAccess

    public init(id: SFUID, janus: JanusAccess) {
        self.id = id
        self.janus = janus
    }
}

/// An HTTP POST of a JSON body, the one request the SFU adapters make (Janus's admin API).
/// Implemented over a maintained HTTP client in the adapter module; scripted in tests.
public protocol HTTPPoster: Sendable {
    /// Posts `body` to `url` and returns the status and body, or throws ``HTTPPostError``.
    func post(_ url: String, body: [UInt8], timeout: Duration) async throws(HTTPPostError) -> (status: Int, body: [UInt8])
}

/// Why an HTTP POST gave no answer.
public enum HTTPPostError: Error, Sendable, Equatable {
    case timeout
    /// Connection refused or reset, TLS failure, a bad URL: the text says which.
    case failed(String)
}

/// A room Switchboard wants on an SFU with rooms: for a live call placed there, with the
/// participant sessions that may enter it now.
public struct DesiredRoom: Sendable, Equatable {
    public var room: UInt64
    /// The call's cid (`type:id`), for the room's description and the log.
    public var call: String
    /// Publishers the room takes (the call type's participant limit).
    public var publishers: Int
    public var sessions: [SessionID]

    public init(room: UInt64, call: String, publishers: Int, sessions: [SessionID]) {
        self.room = room
        self.call = call
        self.publishers = publishers
        self.sessions = sessions
    }
}
