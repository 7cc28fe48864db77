import CLibWebSockets

/// The C callback of the single lws protocol. Finds the owning ``ServiceThread`` through the
/// context's user pointer and forwards the call.
func switchboardLWSCallback(
    _ wsi: OpaquePointer?,
    _ reason: lws_callback_reasons,
    _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?,
    _ length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    let thread = Unmanaged<ServiceThread>.fromOpaque(owner).takeUnretainedValue()
    return thread.handle(wsi: wsi, reason: reason, user: user, input: input, length: length)
}
