import Dispatch
import SwitchboardCore

/// Messages other daemons commit (calls run by several nodes, ADR 0012): their call hubs write
/// them to the shared store, and the dispatcher, which runs on one node, learns of them from a
/// notice on the bus (``storeChanged()``) and, in case a notice is lost, from a read every so
/// often (``refreshFromStore(every:)``).
extension WebhookDispatcher {
    /// The store holds messages this dispatcher may not have been handed: reads the pending
    /// deliveries and sends those it does not hold. Notices that come while a read is under
    /// way make one more read after it. Outcomes decided before the read are committed before
    /// it, and one decided while it runs is not taken for pending, so a delivery is not sent
    /// again because the read saw its row before its outcome was written.
    public func storeChanged() {
        executor.execute { [self] in
            guard running else { return }
            guard !refresh.reading else {
                refresh.again = true
                return
            }
            refresh.reading = true
            refresh.finished = []
            flush(pumping: false)
            idle.enter()
            // After the outcomes just flushed: the store writes and this read share a queue.
            commits.async { [self] in
                let read = Result { try store.pendingWebhooks() }
                executor.execute { [self] in
                    refreshed(read)
                    idle.leave()
                }
            }
        }
    }

    /// Whether a read asked for by ``storeChanged()`` is under way or waiting (tests wait on it).
    public var isRefreshing: Bool {
        executor.sync { refresh.reading }
    }

    private func refreshed(_ read: Result<[PendingWebhook], any Error>) {
        let (finished, again) = (refresh.finished, refresh.again)
        refresh = Refresh()
        switch read {
        case .success(let pending):
            let known = configured
            let fresh = pending.filter {
                known.contains($0.delivery.endpoint) && !finished.contains(Refresh.Key(messageID: $0.delivery.messageID, endpoint: $0.delivery.endpoint))
            }
            scheduler.enqueue(fresh)
            pump()
        case .failure(let error):
            logger.warning("could not read pending webhook deliveries; trying again at the next notice or check", metadata: ["error": "\(error)"])
        }
        if again { storeChanged() }
    }

    /// Reads the store's pending deliveries every `interval` from now until ``stop()`` (a
    /// daemon among several: a notice on the bus can be lost).
    public func refreshFromStore(every interval: Duration) {
        let milliseconds = Int(clamping: interval.milliseconds)
        guard milliseconds > 0 else { return }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "switchboard.webhooks.refresh", qos: .utility))
        timer.schedule(deadline: .now() + .milliseconds(milliseconds), repeating: .milliseconds(milliseconds), leeway: .milliseconds(milliseconds / 10))
        timer.setEventHandler { [weak self] in self?.storeChanged() }
        executor.sync {
            refreshTimer?.cancel()
            refreshTimer = timer
        }
        timer.resume()
    }

    /// A read of the pending deliveries under way.
    struct Refresh {
        struct Key: Hashable {
            let messageID: String
            let endpoint: String
        }

        var reading = false
        /// Another notice came during the read: read again after it.
        var again = false
        /// Deliveries whose attempt ended during the read (their row may be read as pending).
        var finished: Set<Key> = []
    }
}
