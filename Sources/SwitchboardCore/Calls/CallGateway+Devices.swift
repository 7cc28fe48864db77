import Foundation

/// Push devices (`device.register`, `device.unregister`, the admin API): kept in memory, for
/// the `call.ring` webhook of a member who has no connection, and in the store.
extension CallGateway {
    /// Registers `device` for its user. A token another user registered moves to this user;
    /// registering a token again refreshes it. A user at ``CallConfiguration/devicesPerUser``
    /// is refused (`too_many_devices`) until one is removed.
    public mutating func registerDevice(_ device: DeviceRecord, out: inout CallOutput) throws(SwitchboardError) -> JSONValue {
        try DeviceRecord.validate(token: device.token)
        let mine = devices[device.userID] ?? []
        let known = deviceOwners[device.key] == device.userID
        guard known || mine.count < configuration.devicesPerUser else {
            throw SwitchboardError(
                .tooManyDevices, "user \(device.userID) has \(configuration.devicesPerUser) devices; unregister one first")
        }
        if deviceOwners[device.key] != nil { forget(device.key) }
        devices[device.userID, default: []].append(device)
        deviceOwners[device.key] = device.userID
        out.mutations.append(.saveDevice(device))
        return .object(["device": device.json])
    }

    /// Removes a device; `false` when no user has it.
    @discardableResult
    public mutating func removeDevice(_ key: DeviceKey, out: inout CallOutput) -> Bool {
        guard deviceOwners[key] != nil else { return false }
        forget(key)
        out.mutations.append(.deleteDevice(key))
        return true
    }

    /// The devices the store holds, at start.
    mutating func restore(devices records: [DeviceRecord]) {
        devices = [:]
        deviceOwners = [:]
        for device in records.sorted(by: { ($0.createdAt, $0.token) < ($1.createdAt, $1.token) }) {
            if deviceOwners[device.key] != nil { forget(device.key) }
            devices[device.userID, default: []].append(device)
            deviceOwners[device.key] = device.userID
        }
    }

    private mutating func forget(_ key: DeviceKey) {
        guard let owner = deviceOwners.removeValue(forKey: key) else { return }
        devices[owner]?.removeAll { $0.key == key }
        if devices[owner]?.isEmpty == true { devices[owner] = nil }
    }
}
