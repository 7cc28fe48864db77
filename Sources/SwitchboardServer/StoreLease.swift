import Dispatch
import Foundation
import Logging
import SwitchboardCore
import SwitchboardPostgres
import Synchronization

/// This daemon's hold on its PostgreSQL database (ADR 0012): claimed at start (refused while
/// another daemon's lease runs), renewed every third of the lease on a queue of its own,
/// given up at a clean stop. Lost (a renewal failed past the lease, or another node took the
/// database while this one was frozen): readiness fails, so a balancer sends clients elsewhere.
final class StoreLease: Sendable {
    let store: PostgresStore
    let node: String
    let lease: Duration
    private let logger: Logger
    private let state = Mutex<(timer: (any DispatchSourceTimer)?, held: Bool, lastRenewed: ContinuousClock.Instant)>((nil, false, .now))

    init(store: PostgresStore, lease: Duration = .seconds(10), logger: Logger) {
        self.store = store
        self.node = UUID().uuidString.lowercased()
        self.lease = lease
        self.logger = logger
    }

    /// Whether this daemon may write: it holds the lease, renewed within its length.
    var held: Bool {
        state.withLock { $0.held && ContinuousClock.now - $0.lastRenewed < lease }
    }

    /// Claims the database for this node and starts renewing. While another node's lease runs,
    /// waits up to one lease length for it to lapse (a crashed daemon's does; a live one renews
    /// it), then refuses (`conflict`, naming the holder).
    func start(description: String) throws {
        let deadline = ContinuousClock.now + lease + .milliseconds(500)
        var waiting = false
        while true {
            do {
                try store.claimNode(id: node, description: description, lease: lease)
                break
            } catch let error as SwitchboardError where error.code == .conflict && ContinuousClock.now < deadline {
                if !waiting {
                    logger.notice("waiting for another daemon's hold on the PostgreSQL database to lapse", metadata: ["error": "\(error.message)"])
                    waiting = true
                }
                // Polls the lease on the server, at most a few times a second.
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.store-lease"))
        let every = lease / 3
        timer.schedule(deadline: .now() + .milliseconds(Int(every.milliseconds)), repeating: .milliseconds(Int(every.milliseconds)))
        timer.setEventHandler { [weak self] in self?.renew() }
        state.withLock { $0 = (timer, true, .now) }
        // Writes stop when the hold does: a daemon frozen past its lease whose database another
        // daemon took writes nothing more over that daemon's changes.
        store.writeGate = { [weak self] in self?.held ?? false }
        timer.resume()
        logger.info("PostgreSQL database claimed", metadata: ["node": "\(node)", "lease": "\(lease)"])
    }

    private func renew() {
        do {
            if try store.renewNode(id: node, lease: lease) {
                let regained = state.withLock { state in
                    defer { state.held = true; state.lastRenewed = .now }
                    return !state.held
                }
                if regained { logger.notice("PostgreSQL database lease held again", metadata: ["node": "\(node)"]) }
            } else {
                let lost = state.withLock { state in
                    defer { state.held = false }
                    return state.held
                }
                if lost {
                    logger.critical(
                        "another daemon took the PostgreSQL database while this one's lease had lapsed; not ready until it is given back",
                        metadata: ["node": "\(node)"])
                }
            }
        } catch {
            logger.error("could not renew the PostgreSQL database lease", metadata: ["node": "\(node)", "error": "\(error)"])
        }
    }

    /// Stops renewing and gives the database up (the next daemon need not wait for the lease).
    func stop() {
        state.withLock { state in
            // Cancelling does not wait for a renewal under way (which takes this lock).
            state.timer?.cancel()
            state = (nil, false, state.lastRenewed)
        }
        do { try store.releaseNode(id: node) } catch {
            logger.warning("could not give the PostgreSQL database up; the next daemon waits for the lease", metadata: ["error": "\(error)"])
        }
    }
}
