// The rules and values the daemon shares with its client libraries (SwitchboardProtocol) are
// part of the core's vocabulary: every module that imports the core sees them.
@_exported import SwitchboardProtocol
