/// The headers a well-formed admin request carries besides the test's own: the listener's
/// address as `Host`, and `Content-Type: application/json` when there is a body.
func adminTestHeaders(_ headers: [String: String], body: String = "") -> [String: String] {
    var headers = headers
    if headers["host"] == nil { headers["host"] = "127.0.0.1:8081" }
    if !body.isEmpty, headers["content-type"] == nil { headers["content-type"] = "application/json" }
    return headers
}
