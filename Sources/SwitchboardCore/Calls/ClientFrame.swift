/// One frame a call-protocol client sends, parsed and validated.
///
/// Every frame is a JSON object with a `type`; requests also carry a client correlation `id`
/// (string or number, echoed in the response) and their parameters in `data`.
public struct ClientFrame: Sendable, Equatable {
    /// The correlation id, echoed verbatim; `.null` when the client sent none.
    public var id: JSONValue
    public var request: ClientRequest

    public init(id: JSONValue, request: ClientRequest) {
        self.id = id
        self.request = request
    }
}

/// What a client asks for.
public enum ClientRequest: Sendable, Equatable {
    /// First frame: who the client is, and optionally which connection it resumes.
    case auth(token: String, resume: ResumeRequest?)
    case tokenRefresh(token: String)
    case ping
    case getOrCreate(CallCID, members: [UserID], ring: Bool, custom: JSONValue)
    case get(CallCID)
    case join(CallCID, create: Bool, ring: Bool, members: [UserID], location: LocationHint?)
    case leave(CallCID, session: SessionID?)
    case end(CallCID)
    case invite(CallCID, members: [UserID])
    case accept(CallCID)
    case reject(CallCID, reason: RejectReason)
    case updateParticipant(CallCID, session: SessionID?, update: MediaUpdate)
    case sendEvent(CallCID, custom: JSONValue)
    case signal(from: SessionID?, to: SessionID, kind: SignalKind, payload: JSONValue)
    case registerDevice(DeviceProvider, token: String)
    case unregisterDevice(DeviceProvider, token: String)
    case listDevices

    /// The call the request touches, for the token's `call_cids` check.
    public var cid: CallCID? {
        switch self {
        case .getOrCreate(let cid, _, _, _), .get(let cid), .join(let cid, _, _, _, _), .leave(let cid, _), .end(let cid),
            .invite(let cid, _), .accept(let cid), .reject(let cid, _), .updateParticipant(let cid, _, _), .sendEvent(let cid, _):
            cid
        case .auth, .tokenRefresh, .ping, .signal, .registerDevice, .unregisterDevice, .listDevices: nil
        }
    }
}

/// A resume attempt: the token from `connection.ok` and the last event `seq` the client saw.
public struct ResumeRequest: Sendable, Equatable {
    public var token: String
    public var lastSeq: UInt64

    public init(token: String, lastSeq: UInt64) {
        self.token = token
        self.lastSeq = lastSeq
    }
}

/// The kinds of WebRTC signaling `signal.send` relays.
public enum SignalKind: String, Sendable, Equatable, CaseIterable {
    case offer, answer, candidate
}

/// A partial media state: only the fields the client sent change.
public struct MediaUpdate: Sendable, Equatable {
    public var audio: Bool?
    public var video: Bool?
    public var screenshare: Bool?
    public var speaking: Bool?
    public var audioLevel: Double?
    public var pinned: Bool?

    public init(audio: Bool? = nil, video: Bool? = nil, screenshare: Bool? = nil, speaking: Bool? = nil, audioLevel: Double? = nil, pinned: Bool? = nil) {
        self.audio = audio
        self.video = video
        self.screenshare = screenshare
        self.speaking = speaking
        self.audioLevel = audioLevel
        self.pinned = pinned
    }

    public var isEmpty: Bool { self == MediaUpdate() }

    /// `state` with this update applied.
    public func applied(to state: MediaState) -> MediaState {
        var next = state
        if let audio { next.audio = audio }
        if let video { next.video = video }
        if let screenshare { next.screenshare = screenshare }
        if let speaking { next.speaking = speaking }
        if let audioLevel { next.audioLevel = audioLevel }
        if let pinned { next.pinned = pinned }
        return next
    }
}
