import Foundation

/// One configured webhook endpoint.
public struct WebhookEndpoint: Sendable, Equatable {
    /// The name the admin API and the metrics use (`[A-Za-z0-9_-]`, 1–64).
    public var name: String
    /// `http://` or `https://`.
    public var url: String
    /// The configured signing secret, `whsec_<base64>`.
    public var secret: String
    public var events: Set<WebhookEventType>

    public init(name: String, url: String, secret: String, events: Set<WebhookEventType> = Set(WebhookEventType.allCases)) {
        self.name = name
        self.url = url
        self.secret = secret
        self.events = events
    }
}

/// The webhook configuration (`webhooks.*`).
public struct WebhookSettings: Sendable, Equatable {
    public var endpoints: [WebhookEndpoint]
    /// One attempt's deadline, connect to last byte.
    public var timeout: Duration
    /// How long a message is retried before it is dead-lettered.
    public var retryHorizon: Duration
    /// The longest wait between two attempts.
    public var maxBackoff: Duration
    /// Attempts in flight at once per endpoint (each on a different call).
    public var maxInFlight: Int
    /// How long the old secret keeps signing after an admin rotates an endpoint's secret.
    public var rotationGrace: Duration
    /// Delivered and dead deliveries older than this are deleted, with their messages; zero
    /// keeps them for good.
    public var retention: Duration
    /// The nice value the clean-up of old deliveries runs at (0: the daemon's own priority),
    /// where it can be put back afterwards (root, or RLIMIT_NICE).
    public var niceness: Int32
    /// Attempts are made in a worker process of the daemon's own whose threads run at idle
    /// priority (`switchboard webhook-worker`), not on a thread of the daemon's.
    public var workerProcess: Bool

    public init(
        endpoints: [WebhookEndpoint] = [], timeout: Duration = .seconds(10), retryHorizon: Duration = .seconds(86_400),
        maxBackoff: Duration = .seconds(600), maxInFlight: Int = 16, rotationGrace: Duration = .seconds(86_400), niceness: Int32 = 10,
        workerProcess: Bool = true, retention: Duration = .seconds(604_800)
    ) {
        self.retention = retention
        self.niceness = niceness
        self.workerProcess = workerProcess
        self.endpoints = endpoints
        self.timeout = timeout
        self.retryHorizon = retryHorizon
        self.maxBackoff = maxBackoff
        self.maxInFlight = maxInFlight
        self.rotationGrace = rotationGrace
    }

    /// What the call layer needs to write the outbox.
    public var routing: WebhookRouting {
        WebhookRouting(endpoints: endpoints.map { ($0.name, $0.events) })
    }

    public func endpoint(named name: String) -> WebhookEndpoint? {
        endpoints.first { $0.name == name }
    }
}
