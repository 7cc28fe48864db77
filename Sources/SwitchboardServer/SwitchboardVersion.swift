/// The daemon's version.
public enum SwitchboardVersion {
    /// Semantic version of this build.
    public static let current = "0.1.0"
}
