// `scripts/bench bus`: how long a message between two nodes takes over PostgresBus (LISTEN/NOTIFY
// on one database), against a plain statement round trip on the same server in the same run.
//
//   switchboard-bus-bench --url postgres://… [--messages N] [--large-bytes B]
//
// Node a sends a message to node b, whose bus sends it straight back; a times the round trip,
// one message at a time (N of them after 50 to warm up), inline (a 200-byte body, as an
// OFFER's JSON is) and by reference (B bytes, over NOTIFY's limit). The baseline: `SELECT 1` on
// a connection of its own, N times. The relay's cost is half a round trip; the last line is JSON.
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import SwitchboardCore
import SwitchboardPostgres
import Synchronization

struct Options {
    var url = ""
    var messages = 1000
    var largeBytes = 20_000

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw Failure("\(flag) needs a value") }
            switch flag {
            case "--url": url = value
            case "--messages": messages = Int(value) ?? 0
            case "--large-bytes": largeBytes = Int(value) ?? 0
            default: throw Failure("unknown flag \(flag)")
            }
        }
        guard !url.isEmpty, messages > 0, largeBytes > PostgresBus.inlineLimit else {
            throw Failure("usage: switchboard-bus-bench --url postgres://… [--messages N] [--large-bytes B > \(PostgresBus.inlineLimit)]")
        }
    }
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Answers handed from b's echo back to a, by message id.
final class Replies: Sendable {
    private let waiting = Mutex<[String: CheckedContinuation<Void, any Error>]>([:])

    func wait(for id: String, send: @escaping @Sendable () async throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (answer: CheckedContinuation<Void, any Error>) in
            waiting.withLock { $0[id] = answer }
            Task {
                do { try await send() } catch { self.waiting.withLock { $0.removeValue(forKey: id) }?.resume(throwing: error) }
            }
        }
    }

    func arrived(_ id: String) {
        waiting.withLock { $0.removeValue(forKey: id) }?.resume()
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.down)))]
}

func summary(_ samples: [Double]) -> [String: Double] {
    let sorted = samples.sorted()
    return ["p50_us": percentile(sorted, 0.5), "p90_us": percentile(sorted, 0.9), "p99_us": percentile(sorted, 0.99), "max_us": sorted.last ?? 0]
}

func microseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

let options: Options
do { options = try Options(Array(CommandLine.arguments.dropFirst())) } catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(64)
}
var logger = Logger(label: "bus-bench")
logger.logLevel = .warning
let configuration = try PostgresStore.Configuration(url: options.url)
try PostgresStore(configuration: configuration, logger: logger).close()  // migrated
let a = try PostgresBus(configuration: configuration, node: "bench-a", logger: logger)
let b = try PostgresBus(configuration: configuration, node: "bench-b", logger: logger)
let replies = Replies()
let listening = Mutex(0)
let echo = Task { await b.run(listening: { listening.withLock { $0 += 1 } }, deliver: { message in try? await b.send(message, to: "bench-a") }) }
let back = Task { await a.run(listening: { listening.withLock { $0 += 1 } }, deliver: { message in replies.arrived(message.id) }) }
while listening.withLock({ $0 }) < 2 { try await Task.sleep(for: .milliseconds(5)) }

func roundTrips(_ label: String, body: String, count: Int) async throws -> [Double] {
    var samples: [Double] = []
    for n in 0..<(count + 50) {
        let message = PostgresBus.Message(id: "\(label)-\(n)", from: "bench-a", kind: "echo", body: body)
        let started = ContinuousClock.now
        try await replies.wait(for: message.id) { try await a.send(message, to: "bench-b") }
        if n >= 50 { samples.append(microseconds(ContinuousClock.now - started)) }
    }
    return samples
}

let baselineConnection = try await PostgresConnection.connect(
    on: MultiThreadedEventLoopGroup.singleton.next(), configuration: PostgresConnection.Configuration(
        host: configuration.host, port: configuration.port, username: configuration.username, password: configuration.password,
        database: configuration.database, tls: .disable), id: 9, logger: logger).get()
var baseline: [Double] = []
for n in 0..<(options.messages + 50) {
    let started = ContinuousClock.now
    for try await _ in try await baselineConnection.query("SELECT 1", logger: logger) {}
    if n >= 50 { baseline.append(microseconds(ContinuousClock.now - started)) }
}
try await baselineConnection.close().get()
let inline = try await roundTrips("inline", body: String(repeating: "o", count: 200), count: options.messages)
let large = try await roundTrips("large", body: String(repeating: "l", count: options.largeBytes), count: max(50, options.messages / 10))
echo.cancel()
back.cancel()
await a.close()
await b.close()

let results: [String: [String: Double]] = ["select_1_round_trip": summary(baseline), "inline_round_trip": summary(inline), "by_reference_round_trip": summary(large)]
for (name, figures) in results.sorted(by: { $0.key < $1.key }) {
    print("\(name): p50 \(Int(figures["p50_us"]!)) µs, p90 \(Int(figures["p90_us"]!)) µs, p99 \(Int(figures["p99_us"]!)) µs")
}
let inlineP50 = results["inline_round_trip"]!["p50_us"]!, baseP50 = results["select_1_round_trip"]!["p50_us"]!
print("one way, inline (half a round trip): p50 \(Int(inlineP50 / 2)) µs; round trip ÷ SELECT 1 round trip: \(String(format: "%.2f", inlineP50 / baseP50))")
var line = results.mapValues { $0 as [String: Double] } as [String: Any]
line["messages"] = options.messages
line["large_bytes"] = options.largeBytes
print(String(decoding: try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]), as: UTF8.self))
