// libFuzzer target: user tokens (JWTTokenService.verify).
// Built by scripts/fuzz with -sanitize=fuzzer,address and -DSWITCHBOARD_FUZZING (libFuzzer
// provides main). The per-input logic lives in SwitchboardFuzzing (FuzzTarget.token), which
// the regression tests (Fuzz/RegressionTests) replay too.
import SwitchboardFuzzing

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    FuzzTarget.token.runTrappingOnFinding(bytes)
    return 0
}

#if !SWITCHBOARD_FUZZING
/// A plain build has no libFuzzer: it replays the files or directories given as arguments.
@main
enum Replay {
    static func main() { FuzzTarget.token.replayMain() }
}
#endif
