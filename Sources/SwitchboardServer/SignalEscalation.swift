import Dispatch
import Foundation
import Logging

/// After the first SIGTERM/SIGINT starts a graceful shutdown, a second one exits at once.
final class SignalEscalation {
    private let sources: [any DispatchSourceSignal]

    private init(sources: [any DispatchSourceSignal]) { self.sources = sources }

    static func armed(logger: Logger) -> SignalEscalation {
        let sources = [SIGTERM, SIGINT].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                logger.warning("second signal during shutdown; exiting now")
                exit(1)
            }
            source.resume()
            return source
        }
        return SignalEscalation(sources: sources)
    }

    func disarm() {
        for source in sources { source.cancel() }
    }
}
