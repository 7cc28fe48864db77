import Logging
import SwitchboardAdmin
import SwitchboardApp
import SwitchboardCore

/// The client listener's own HTTP routes: static files (``StaticFileServer``) and, when
/// `auth.dev_tokens` is on, `POST /dev/token`.
struct DaemonClientRoutes: ClientRequestHandler {
    let files: StaticFileServer
    let devTokens: DevTokenRoute?

    /// Builds the routes and logs what is served: each mount, a configured SDK directory that is
    /// not there, and a warning when development tokens are on.
    init(configuration: HTTPConfiguration, mint: DevTokenRoute?, logger: Logger) {
        files = StaticFileServer(mounts: configuration.mounts)
        devTokens = configuration.devTokens ? mint : nil
        for mount in configuration.mounts {
            if files.mounts.contains(mount) {
                logger.info("serving static files", metadata: ["http.prefix": "\(mount.prefix)", "http.directory": "\(mount.directory)"])
            } else {
                logger.notice("not serving \(mount.prefix): \(mount.directory) is not a directory (http.sdk_dir)")
            }
        }
        if devTokens != nil {
            logger.warning("auth.dev_tokens is on: POST \(DevTokenRoute.path) mints a token for any user to loopback clients (development only)")
        }
    }

    func handles(_ path: String) -> Bool {
        (devTokens != nil && path == DevTokenRoute.path) || files.handles(path)
    }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        if let devTokens, request.path == DevTokenRoute.path { return devTokens.respond(to: request) }
        return files.respond(to: request) ?? SwitchboardError(.notFound, "no route for \(request.method) \(LogText.escape(request.path))").httpResponse
    }
}
