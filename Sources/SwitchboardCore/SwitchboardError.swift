/// The one error type of the daemon. Codes are stable wire names; each has a category that
/// the edges translate to an HTTP status or a wire error frame.
public struct SwitchboardError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, documented error code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public let category: Category
        public init?(rawValue: String) {
            guard let known = Self.all.first(where: { $0.rawValue == rawValue }) else { return nil }
            self = known
        }
        init(_ rawValue: String, _ category: Category) {
            self.rawValue = rawValue
            self.category = category
        }
        public var description: String { rawValue }

        public static let invalidRequest = Code("invalid_request", .invalidArgument)
        public static let invalidConfiguration = Code("invalid_configuration", .invalidArgument)
        public static let unauthenticated = Code("unauthenticated", .unauthorized)
        public static let tokenExpired = Code("token_expired", .unauthorized)
        public static let tokenInvalid = Code("token_invalid", .unauthorized)
        public static let forbidden = Code("forbidden", .forbidden)
        public static let notFound = Code("not_found", .notFound)
        public static let methodNotAllowed = Code("method_not_allowed", .methodNotAllowed)
        public static let conflict = Code("conflict", .conflict)
        public static let payloadTooLarge = Code("payload_too_large", .tooLarge)
        public static let unsupportedMediaType = Code("unsupported_media_type", .unsupportedMediaType)
        public static let rateLimited = Code("rate_limited", .rateLimited)
        public static let unavailable = Code("unavailable", .unavailable)
        public static let internalError = Code("internal", .internal)
        public static let unknownType = Code("unknown_type", .invalidArgument)
        public static let callNotFound = Code("call_not_found", .notFound)
        public static let sessionNotFound = Code("session_not_found", .notFound)
        public static let callEnded = Code("call_ended", .conflict)
        public static let notAMember = Code("not_a_member", .forbidden)
        public static let callFull = Code("call_full", .conflict)
        public static let noSFUAvailable = Code("no_sfu_available", .unavailable)
        public static let tooManyDevices = Code("too_many_devices", .conflict)

        /// Every code, for documentation and parsing.
        public static let all: [Code] = [
            .invalidRequest, .invalidConfiguration, .unauthenticated, .tokenExpired, .tokenInvalid, .forbidden, .notFound,
            .methodNotAllowed, .conflict, .payloadTooLarge, .unsupportedMediaType, .rateLimited, .unavailable, .internalError, .unknownType,
            .callNotFound, .sessionNotFound, .callEnded, .notAMember, .callFull, .noSFUAvailable, .tooManyDevices,
        ]
    }

    /// Broad classes of failure, each with one HTTP status.
    public enum Category: Sendable, Equatable {
        case invalidArgument, unauthorized, forbidden, notFound, methodNotAllowed, conflict
        case tooLarge, unsupportedMediaType, rateLimited, unavailable, `internal`

        /// The HTTP status for this category.
        public var httpStatus: Int {
            switch self {
            case .invalidArgument: 400
            case .unauthorized: 401
            case .forbidden: 403
            case .notFound: 404
            case .methodNotAllowed: 405
            case .conflict: 409
            case .tooLarge: 413
            case .unsupportedMediaType: 415
            case .rateLimited: 429
            case .unavailable: 503
            case .internal: 500
            }
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// `{"error":{"code":…,"message":…}}` with the category's status.
    public var httpResponse: HTTPResponse {
        var body: [UInt8] = Array(#"{"error":{"code":"#.utf8)
        JSONStringUnescaper.appendQuoted(code.rawValue, to: &body)
        body.append(contentsOf: #","message":"#.utf8)
        JSONStringUnescaper.appendQuoted(message, to: &body)
        body.append(contentsOf: "}}".utf8)
        return .json(code.category.httpStatus, body)
    }
}
