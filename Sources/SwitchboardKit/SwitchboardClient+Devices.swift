/// Push devices (docs/protocol.md 6.5, `device.*`): the app registers its push token so that a
/// call ringing the user while no socket of theirs is open reaches the operator's push service
/// in the `call.ring` webhook (docs/webhooks.md, "Offline ringing"). Like every request these
/// connect first when the socket is not open; without `persistingSocketConnection` the socket
/// closes again afterwards when no call needs it.
extension SwitchboardClient {
    /// `device.register`: registers the app's push token for this user, and answers the device.
    /// Send it after each `connect()` and whenever the token changes; registering a token again
    /// refreshes it. Errors: ``SwitchboardClientError/Code/tooManyDevices`` (the user has
    /// `calls.devices_per_user` devices, 10 by default: unregister one first),
    /// `invalid_request` (an empty token or one with control characters), `payload_too_large`
    /// (a token over 4096 bytes).
    @discardableResult
    public func registerDevice(provider: DeviceProvider, token: String) async throws(SwitchboardClientError) -> Device {
        let data = try await deviceRequest("device.register", Device.fields(provider: provider, token: token))
        return try Device(json: try data.field("device"))
    }

    /// `device.unregister`: removes the app's push token (when the user signs out).
    /// ``SwitchboardClientError/Code/notFound`` when this user has no such device.
    public func unregisterDevice(provider: DeviceProvider, token: String) async throws(SwitchboardClientError) {
        _ = try await deviceRequest("device.unregister", Device.fields(provider: provider, token: token))
    }

    /// `device.list`: this user's push devices, oldest first.
    public func devices() async throws(SwitchboardClientError) -> [Device] {
        try Device.list(try await deviceRequest("device.list", [:]).field("devices"))
    }

    private func deviceRequest(_ type: String, _ data: [String: JSONValue]) async throws(SwitchboardClientError) -> JSONValue {
        let result: Result<JSONValue, SwitchboardClientError>
        do throws(SwitchboardClientError) {
            result = .success(try await request(type, data: data))
        } catch {
            result = .failure(error)
        }
        if !config.persistingSocketConnection, pending.isEmpty { await disconnectIfIdle() }
        return try result.get()
    }
}
