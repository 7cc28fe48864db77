// Declarations only (include/CFuzzerDriver.h): libFuzzer defines LLVMFuzzerRunDriver.
#include "CFuzzerDriver.h"
