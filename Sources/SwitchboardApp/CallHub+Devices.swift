import Foundation
import SwitchboardCore

extension CallHub {
    /// A user's push devices, oldest first, as the call layer holds them.
    public func devices(of user: UserID) -> [DeviceRecord] {
        queue.sync { gateway.devices[user] ?? [] }
    }

    /// Removes a user's device by its ``DeviceKey/id``, committed before it returns; `false`
    /// when the user has no such device.
    public func deleteDevice(of user: UserID, id: String) throws(SwitchboardError) -> Bool {
        var removed = false
        try adminAction { gateway, output, _ in
            guard let device = gateway.devices[user]?.first(where: { $0.key.id == id }) else { return }
            removed = gateway.removeDevice(device.key, out: &output.calls)
        }
        return removed
    }
}
