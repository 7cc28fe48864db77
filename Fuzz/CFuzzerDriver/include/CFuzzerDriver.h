#ifndef SWITCHBOARD_C_FUZZER_DRIVER_H
#define SWITCHBOARD_C_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver for programs that have their own `main` (compiler-rt's FuzzerInterface.h,
/// LLVM 12 and later). The fuzz executables call it from their Swift `main`, which SwiftPM links
/// as the program's entry point; it is defined only when linking with -sanitize=fuzzer.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
