import Foundation
import SwitchboardCore

extension WebhookDispatcher {
    /// Every configured endpoint with its state and pending count.
    public func endpointViews() -> [WebhookEndpointView] {
        executor.sync {
            let now = wallClock()
            return settings.endpoints.map { endpoint in
                let state = scheduler.endpointState(endpoint.name)
                let until = state?.previousUntil.flatMap { $0 > now ? $0 : nil }
                return WebhookEndpointView(
                    name: endpoint.name, url: endpoint.url, events: WebhookEventType.allCases.filter(endpoint.events.contains),
                    disabledAt: scheduler.endpointState(endpoint.name)?.disabledAt, previousSecretUntil: until,
                    pending: scheduler.pendingCount(endpoint: endpoint.name))
            }
        }
    }

    /// Puts a dead delivery back in its lane, due now; committed before it returns.
    public func retry(messageID: String, endpoint: String) throws(SwitchboardError) -> WebhookDelivery {
        guard settings.endpoint(named: endpoint) != nil else { throw SwitchboardError(.notFound, "no webhook endpoint \(endpoint)") }
        let stored = try read { try store.webhook(messageID: messageID, endpoint: endpoint) }
        let result: Result<WebhookDelivery, SwitchboardError> = executor.sync {
            do throws(SwitchboardError) {
                let mutations = try scheduler.retry(messageID: messageID, endpoint: endpoint, stored: stored, now: wallClock())
                try applyOrThrow(mutations)
                pump()
                for case .saveWebhookDelivery(let delivery) in mutations { return .success(delivery) }
                return .failure(SwitchboardError(.internalError, "the retry changed nothing"))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// A new secret for `endpoint`; the one it replaces keeps signing for `grace`.
    public func rotateSecret(endpoint: String, grace: Duration?) throws(SwitchboardError) -> (secret: String, previousUntil: Date) {
        guard let configured = settings.endpoint(named: endpoint) else { throw SwitchboardError(.notFound, "no webhook endpoint \(endpoint)") }
        let result: Result<(String, Date), SwitchboardError> = executor.sync {
            let now = wallClock()
            var state = scheduler.endpointState(endpoint) ?? WebhookEndpointState(name: endpoint)
            var generator = SystemRandomNumberGenerator()
            let secret = WebhookSignature.newSecret(using: &generator)
            let until = now.addingTimeInterval((grace ?? settings.rotationGrace).seconds)
            state.previousSecret = state.secret ?? configured.secret
            state.previousUntil = until
            state.secret = secret
            state.configuredDigest = WebhookSignature.digest(ofConfiguredSecret: configured.secret)
            do throws(SwitchboardError) {
                try applyOrThrow([.saveWebhookEndpoint(state)])
            } catch {
                return .failure(error)
            }
            scheduler.updateEndpoint(state)
            return .success((secret, until))
        }
        let (secret, until) = try result.get()
        return (secret, until)
    }

    /// Sends to an endpoint a 410 disabled again (`conflict` when it is not disabled).
    public func enable(endpoint: String) throws(SwitchboardError) {
        guard settings.endpoint(named: endpoint) != nil else { throw SwitchboardError(.notFound, "no webhook endpoint \(endpoint)") }
        let result: Result<Void, SwitchboardError> = executor.sync {
            let mutations = scheduler.enable(endpoint: endpoint)
            guard !mutations.isEmpty else { return .failure(SwitchboardError(.conflict, "the endpoint \(endpoint) is not disabled")) }
            do throws(SwitchboardError) {
                try applyOrThrow(mutations)
            } catch {
                // Not recorded: it would come back disabled after a restart, so it stays so now.
                _ = scheduler.disable(endpoint: endpoint, now: wallClock())
                return .failure(error)
            }
            pump()
            return .success(())
        }
        try result.get()
    }

    public func listDeliveries(_ query: WebhookDeliveryQuery) throws(SwitchboardError) -> WebhookDeliveryPage {
        try read { try store.listDeliveries(query) }
    }

    /// Commits `mutations` after the outcomes queued before them (on `commits`).
    func applyOrThrow(_ mutations: [CallMutation]) throws(SwitchboardError) {
        let failure: (any Error)? = commits.sync {
            do {
                try store.apply(mutations)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            logger.error("could not commit a webhook change", metadata: ["error": "\(failure)"])
            throw SwitchboardError(.unavailable, "the store did not take the change; try again")
        }
    }

    func read<T>(_ body: () throws -> T) throws(SwitchboardError) -> T {
        do {
            return try body()
        } catch let error as SwitchboardError {
            throw error
        } catch {
            logger.error("webhook store read failed", metadata: ["error": "\(error)"])
            throw SwitchboardError(.unavailable, "the store could not be read")
        }
    }
}

/// The admin API's webhook port: endpoints and deliveries from the worker, devices from the
/// call hub (which holds them for ringing).
public struct WebhookAdmin: WebhookAdministration {
    public let dispatcher: WebhookDispatcher
    public let hub: CallHub

    public init(dispatcher: WebhookDispatcher, hub: CallHub) {
        self.dispatcher = dispatcher
        self.hub = hub
    }

    public func endpoints() -> [WebhookEndpointView] { dispatcher.endpointViews() }
    public func listDeliveries(_ query: WebhookDeliveryQuery) throws(SwitchboardError) -> WebhookDeliveryPage {
        try dispatcher.listDeliveries(query)
    }
    public func retry(messageID: String, endpoint: String) throws(SwitchboardError) -> WebhookDelivery {
        try dispatcher.retry(messageID: messageID, endpoint: endpoint)
    }
    public func rotateSecret(endpoint: String, grace: Duration?) throws(SwitchboardError) -> (secret: String, previousUntil: Date) {
        try dispatcher.rotateSecret(endpoint: endpoint, grace: grace)
    }
    public func enable(endpoint: String) throws(SwitchboardError) { try dispatcher.enable(endpoint: endpoint) }
    public func devices(of user: UserID) throws(SwitchboardError) -> [DeviceRecord] { hub.devices(of: user) }
    public func deleteDevice(of user: UserID, id: String) throws(SwitchboardError) -> Bool { try hub.deleteDevice(of: user, id: id) }
}
