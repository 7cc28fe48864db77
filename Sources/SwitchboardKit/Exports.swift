// JSONValue and the participants' order come from SwitchboardProtocol; apps that import
// SwitchboardKit see them.
@_exported import SwitchboardProtocol
