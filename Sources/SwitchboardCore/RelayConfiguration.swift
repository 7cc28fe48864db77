/// Settings of the PeerJS relay (config section `peerjs`).
public struct RelayConfiguration: Sendable, Equatable {
    /// The API key clients must present (`key`).
    public var key: String
    /// Most registered peers at once (`concurrent_limit`).
    public var concurrentLimit: Int
    /// How long an undelivered message waits for its destination (`expire_timeout`).
    public var expireTimeout: Duration
    /// A socket silent this long is closed and its id freed (`alive_timeout`).
    public var aliveTimeout: Duration
    /// Whether `GET /<key>/peers` lists ids (`allow_discovery`).
    public var allowDiscovery: Bool
    /// Queued messages per offline destination (`queue.per_destination`).
    public var maxQueuedPerDestination: Int
    /// Queued messages per sender across all destinations (`queue.per_sender`).
    public var maxQueuedPerSender: Int
    /// Queued messages in total (`queue.total`).
    public var maxQueuedTotal: Int
    /// Queued bytes in total (`queue.total_bytes`).
    public var maxQueuedBytes: Int
    /// Queued bytes per sender across all destinations (`queue.per_sender_bytes`): a sender's
    /// share of the total, so a few senders cannot fill it for everyone.
    public var maxQueuedBytesPerSender: Int
    /// Malformed frames tolerated per second, sustained (`malformed.rate`).
    public var malformedRate: Double
    /// Malformed frames tolerated in a burst (`malformed.burst`).
    public var malformedBurst: Double
    /// Messages one socket may send per second, sustained (`messages.rate`).
    public var messageRate: Double
    /// Messages one socket may send in a burst (`messages.burst`); past it they are dropped,
    /// and a socket that keeps going for another burst is closed (1008).
    public var messageBurst: Double
    /// `peerjs.auth = "jwt"`: the `token` must be a user token whose user is the `id`.
    public var requireSignedIDs: Bool = false

    /// The defaults, matching the PeerJS server where it has one.
    public init(
        key: String = "peerjs",
        concurrentLimit: Int = 5000,
        expireTimeout: Duration = .milliseconds(5000),
        aliveTimeout: Duration = .milliseconds(60000),
        allowDiscovery: Bool = false,
        maxQueuedPerDestination: Int = 256,
        maxQueuedPerSender: Int = 1024,
        maxQueuedTotal: Int = 100_000,
        maxQueuedBytes: Int = 64 * 1024 * 1024,
        maxQueuedBytesPerSender: Int = 4 * 1024 * 1024,
        malformedRate: Double = 5,
        malformedBurst: Double = 20,
        messageRate: Double = 5000,
        messageBurst: Double = 10000
    ) {
        self.messageRate = messageRate
        self.messageBurst = messageBurst
        self.key = key
        self.concurrentLimit = concurrentLimit
        self.expireTimeout = expireTimeout
        self.aliveTimeout = aliveTimeout
        self.allowDiscovery = allowDiscovery
        self.maxQueuedPerDestination = maxQueuedPerDestination
        self.maxQueuedPerSender = maxQueuedPerSender
        self.maxQueuedTotal = maxQueuedTotal
        self.maxQueuedBytes = maxQueuedBytes
        self.maxQueuedBytesPerSender = maxQueuedBytesPerSender
        self.malformedRate = malformedRate
        self.malformedBurst = malformedBurst
    }

    /// How often the relay wants ``PeerRelay/tick(now:into:)``: a tenth of the shorter
    /// timeout, between 10 ms and 1 s.
    public var sweepInterval: Duration {
        let shorter = min(expireTimeout, aliveTimeout) / 10
        return min(max(shorter, .milliseconds(10)), .seconds(1))
    }
}
