import SwitchboardCore

/// A listening socket a service thread serves, with its lws vhost and raw-file wsi once adopted.
/// Owned by the service thread.
final class BoundListener {
    let configuration: ListenerConfiguration
    let fd: Int32
    var vhost: OpaquePointer?
    var wsi: OpaquePointer?

    init(configuration: ListenerConfiguration, fd: Int32) {
        self.configuration = configuration
        self.fd = fd
    }

    var role: ListenerRole { configuration.role }
}
