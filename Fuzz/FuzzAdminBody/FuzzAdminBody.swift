// libFuzzer target: admin API requests and JSON bodies (AdminRouter).
// Built by scripts/fuzz with SWITCHBOARD_FUZZ=1 (libFuzzer and ASan; main runs libFuzzer's
// driver). The per-input logic lives in SwitchboardFuzzing (FuzzTarget.adminBody), which
// the regression tests (Fuzz/RegressionTests) replay too.
import SwitchboardFuzzing

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    FuzzTarget.adminBody.runTrappingOnFinding(bytes)
    return 0
}

/// Fuzz build (SWITCHBOARD_FUZZ=1): libFuzzer's driver. Plain build: replays the files or
/// directories given as arguments.
@main
enum Entry {
    static func main() {
        #if SWITCHBOARD_FUZZING
        FuzzTarget.runLibFuzzer(fuzzOneInput)
        #else
        FuzzTarget.adminBody.replayMain()
        #endif
    }
}
