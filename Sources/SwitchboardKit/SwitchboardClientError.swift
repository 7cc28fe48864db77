/// The one error the library throws: the protocol's stable error codes (docs/protocol.md 6.14),
/// plus the client's own (`timeout`, `disconnected`, `token_provider_failed`, `protocol_error`).
public struct SwitchboardClientError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // The server's codes.
        public static let invalidRequest = Code(rawValue: "invalid_request")
        public static let unauthenticated = Code(rawValue: "unauthenticated")
        public static let tokenExpired = Code(rawValue: "token_expired")
        public static let tokenInvalid = Code(rawValue: "token_invalid")
        public static let forbidden = Code(rawValue: "forbidden")
        public static let conflict = Code(rawValue: "conflict")
        public static let payloadTooLarge = Code(rawValue: "payload_too_large")
        public static let rateLimited = Code(rawValue: "rate_limited")
        public static let unavailable = Code(rawValue: "unavailable")
        public static let `internal` = Code(rawValue: "internal")
        public static let unknownType = Code(rawValue: "unknown_type")
        public static let callNotFound = Code(rawValue: "call_not_found")
        public static let sessionNotFound = Code(rawValue: "session_not_found")
        public static let callEnded = Code(rawValue: "call_ended")
        public static let notAMember = Code(rawValue: "not_a_member")
        public static let callFull = Code(rawValue: "call_full")
        public static let noSFUAvailable = Code(rawValue: "no_sfu_available")
        /// `device.unregister` of a device this user has not registered.
        public static let notFound = Code(rawValue: "not_found")
        /// `device.register` of one more device than `calls.devices_per_user`: unregister one first.
        public static let tooManyDevices = Code(rawValue: "too_many_devices")
        // The client's own.
        /// No answer within the request timeout.
        public static let timeout = Code(rawValue: "timeout")
        /// The socket is gone (closed, or never opened) and the request was not sent or not answered.
        public static let disconnected = Code(rawValue: "disconnected")
        /// The token provider failed every retry: the client cannot authenticate any more.
        public static let tokenProviderFailed = Code(rawValue: "token_provider_failed")
        /// The server sent something this library cannot read.
        public static let protocolError = Code(rawValue: "protocol_error")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Whether trying again later may succeed (the request did not happen).
    public var isRetryable: Bool {
        [.rateLimited, .unavailable, .timeout, .disconnected].contains(code)
    }

    public var description: String { "\(code): \(message)" }
}
