import SwitchboardCore

extension SFUDirectory: SFUAdministration {}
