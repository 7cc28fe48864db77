

/// The port the admin routes use to manage the location table and explain placements
/// (implemented by the app's `SFUDirectory`).
public protocol SFUAdministration: Sendable {
    func list() -> [SFUView]
    func get(_ id: SFUID) -> SFUView?
    func create(_ definition: SFUDefinition) throws(SwitchboardError) -> SFUView
    func replace(_ id: SFUID, with definition: SFUDefinition) throws(SwitchboardError) -> SFUView
    func delete(_ id: SFUID) throws(SwitchboardError) -> [Reassignment]
    func drain(_ id: SFUID) throws(SwitchboardError) -> SFUView
    func heartbeat(_ id: SFUID, load: Int, credential: String?, isAdmin: Bool) throws(SwitchboardError) -> SFUView
    func explain(callID: String?, participants: [LocationHint]?) throws(SwitchboardError) -> PlacementExplanation
}
