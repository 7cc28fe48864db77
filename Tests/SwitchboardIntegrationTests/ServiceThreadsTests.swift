import SwitchboardTesting
import XCTest

/// Several service threads, each with its own lws context and SO_REUSEPORT listener on the
/// same port: peers land on different threads and must still reach each other.
final class ServiceThreadsTests: XCTestCase {
    func test_peersOnDifferentServiceThreadsRelayToEachOther() throws {
        let daemon = try TestDaemon(["server.service_threads": .int(3)])
        let peers = try (0..<12).map { try daemon.peer(id: "p\($0)") }
        let threads = daemon.daemon.hub.withRelay { relay in Set(relay.registeredPeers.compactMap { relay.connection(of: $0)?.thread }) }
        XCTAssertGreaterThan(threads.count, 1, "SO_REUSEPORT should spread 12 connections over the 3 threads")
        for (index, sender) in peers.enumerated() {
            let target = (index + 5) % peers.count
            try sender.send(#"{"type":"OFFER","dst":"p\#(target)","payload":\#(index)}"#)
        }
        for (index, receiver) in peers.enumerated() {
            let source = (index - 5 + peers.count) % peers.count
            XCTAssertEqual(try receiver.next(), .text(#"{"type":"OFFER","src":"p\#(source)","dst":"p\#(index)","payload":\#(source)}"#))
        }
    }

    func test_shutdownClosesPeersOnEveryServiceThread() throws {
        let daemon = try TestDaemon(["server.service_threads": .int(2)])
        let peers = try (0..<6).map { try daemon.peer(id: "p\($0)") }
        let server = daemon.daemon
        DispatchQueue.global().async { server.shutdown() }
        for peer in peers { XCTAssertEqual(try peer.awaitClose(), 1001) }
    }
}
