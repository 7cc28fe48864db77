/// The small line language the stateful harnesses read, so one input can be a whole session:
/// every line is a step; a line starting with `@` is a directive (`@b …`, `@tick 30`, `@close`,
/// `@open …`), any other line is a frame from the main client.
///
/// Directives are deliberately short ASCII words so the dictionaries can name them.
struct FuzzScript {
    /// One step of the script.
    enum Step {
        /// A frame (the line's bytes) from the main client, or from the second one (`@b `).
        case frame([UInt8], second: Bool)
        /// `@tick N`: the clock moves N seconds (0–99999) and the timers run.
        case tick(seconds: Int)
        /// `@close`: the main client's socket closes.
        case close
        /// `@open` / `@open ARG`: a new socket for the main client, with an optional argument
        /// (a token, a peer id, …).
        case open(String?)
    }

    /// Most steps read from one input, so one input stays fast.
    static let maximumSteps = 64

    /// The input split at `\n` into at most ``maximumSteps`` steps.
    static func steps(_ bytes: [UInt8]) -> [Step] {
        var steps: [Step] = []
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).prefix(maximumSteps) {
            steps.append(step(line))
        }
        return steps
    }

    private static func step(_ line: ArraySlice<UInt8>) -> Step {
        guard line.first == UInt8(ascii: "@") else { return .frame(Array(line), second: false) }
        let words = line.dropFirst().split(separator: UInt8(ascii: " "), maxSplits: 1, omittingEmptySubsequences: false)
        let verb = String(decoding: words.first ?? [], as: UTF8.self)
        let argument = words.count > 1 ? words[1] : nil
        switch verb {
        case "b": return .frame(Array(argument ?? []), second: true)
        case "tick":
            let digits = String(decoding: (argument ?? []).prefix(5), as: UTF8.self)
            return .tick(seconds: max(0, Int(digits) ?? 1))  // clocks here never run backwards
        case "close": return .close
        case "open": return .open(argument.map { String(decoding: $0, as: UTF8.self) })
        default: return .frame(Array(line), second: false)
        }
    }
}

extension FuzzScript.Step: CustomStringConvertible {
    var description: String {
        switch self {
        case .frame(let bytes, let second): (second ? "@b " : "") + String(decoding: bytes.prefix(400), as: UTF8.self)
        case .tick(let seconds): "@tick \(seconds)"
        case .close: "@close"
        case .open(let argument): "@open" + (argument.map { " " + $0 } ?? "")
        }
    }
}
