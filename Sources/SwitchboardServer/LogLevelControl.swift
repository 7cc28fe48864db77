import Foundation
import Logging

/// The daemon's log level, changeable at run time (admin API, SIGHUP). Log handlers made by
/// ``DynamicLevelLogHandler`` read it on every call.
public final class LogLevelControl: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Logger.Level

    public init(_ level: Logger.Level) { current = level }

    public var level: Logger.Level {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
}

/// A stdout log handler whose level follows a ``LogLevelControl``.
public struct DynamicLevelLogHandler: LogHandler {
    private var inner: StreamLogHandler
    private let control: LogLevelControl

    public init(label: String, control: LogLevelControl) {
        inner = StreamLogHandler.standardOutput(label: label)
        self.control = control
    }

    public var logLevel: Logger.Level {
        get { control.level }
        set { control.level = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        inner.log(event: event)
    }
}
