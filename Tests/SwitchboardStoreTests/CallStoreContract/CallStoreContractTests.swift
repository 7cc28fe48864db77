import Foundation
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore
import SwitchboardTesting
import XCTest

/// One test per ``CallStoreContract`` check, for each implementation. Every class conforms, so a
/// check added here must be run against both or the target does not compile. (The methods are
/// written out in each class: Linux XCTest does not reliably discover test methods that come from
/// a base class or a protocol extension.)
protocol CallStoreContractCases {
    func test_everyRecordTypeRoundTripsWithAllItsFields() throws
    func test_optionalFieldsRoundTripAsNil() throws
    func test_savesUpsertInPlaceAndDeleteConnectionRemovesIt() throws
    func test_aSessionSavedUnderAnotherCallMovesToIt() throws
    func test_mutationsApplyInBatchOrder() throws
    func test_aLargeInterleavedBatchLeavesWhatItsLastWritesSay() throws
    func test_rowsOfACallThatIsNotStoredAreKept() throws
    func test_aNULInAFreeTextFieldRefusesTheWholeBatch() throws
    func test_placementsCommitWithTheirBatchAndGoWithIt() throws
    func test_aSessionWithANonFiniteNumberRefusesTheWholeBatch() throws
    func test_loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection() throws
    func test_liveStateTiesAreBrokenByIdentifier() throws
    func test_anEndedCallLeavesTheLiveStateButLoadsByItsCID() throws
    func test_anUnknownCallIsNil() throws
    func test_presenceHoldsEachUsersLiveCallsConnectionsAndDevices() throws
    func test_listCallsFiltersByStateTypeMemberAndCreationTime() throws
    func test_listCallsSeesTheLatestSaveOfACall() throws
    func test_listCallsPagesNewestFirstWithoutRepeatsOrGaps() throws
    func test_theLimitIsClampedToTheOneListRule() throws
    func test_anInvalidCursorIsAnInvalidRequest() throws
    func test_cursorsAreURLSafe() throws
    func test_callDetailHoldsOrderedMembersEverySessionAndTheLastEvents() throws
    func test_eventsKeepTheirAppendOrder() throws
    func test_callDetailSessionTiesAreBrokenBySessionID() throws
    func test_lastEventIsTheNewestOfItsType() throws
    func test_timesAreKeptToTheNearestMillisecond() throws
    func test_historyComparesCreationTimesToTheMillisecond() throws
    func test_customDataAndPayloadsReadBackAsTheirJSONText() throws
    func test_identifiersCompareByteForByte() throws
    // CallStoreContract+Webhooks.swift
    func test_enqueuedWebhooksArePendingInLaneOrder() throws
    func test_deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() throws
    func test_listDeliveriesPagesNewestFirstWithFilters() throws
    func test_endpointStatesUpsertByName() throws
    func test_devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() throws
    func test_eventSeqRoundTripsWithItsCall() throws
    func test_aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() throws
    func test_webhookTimesAndDataReadBackAsStored() throws
    func test_pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() throws
}

/// The contract against the SQLite store, each store on a new file in a temporary directory,
/// with its batch log (ADR 0010): commits append to the log and reads fold it first.
final class SQLiteCallStoreContractTests: XCTestCase, CallStoreContractCases {
    private var contract: CallStoreContract {
        CallStoreContract(
            makeStore: { [unowned self] in try SQLiteStore(configuration: StoreConfiguration(directory: try self.temporaryDirectory())) },
            placements: { store in
                try Dictionary(uniqueKeysWithValues: (store as! SQLiteStore).allPlacements().map { ($0.callID, CallStoreContract.placed($0)) })
            })
    }

    func test_everyRecordTypeRoundTripsWithAllItsFields() throws { try contract.everyRecordTypeRoundTripsWithAllItsFields() }
    func test_optionalFieldsRoundTripAsNil() throws { try contract.optionalFieldsRoundTripAsNil() }
    func test_savesUpsertInPlaceAndDeleteConnectionRemovesIt() throws { try contract.savesUpsertInPlaceAndDeleteConnectionRemovesIt() }
    func test_aSessionSavedUnderAnotherCallMovesToIt() throws { try contract.aSessionSavedUnderAnotherCallMovesToIt() }
    func test_mutationsApplyInBatchOrder() throws { try contract.mutationsApplyInBatchOrder() }
    func test_aLargeInterleavedBatchLeavesWhatItsLastWritesSay() throws { try contract.aLargeInterleavedBatchLeavesWhatItsLastWritesSay() }
    func test_rowsOfACallThatIsNotStoredAreKept() throws { try contract.rowsOfACallThatIsNotStoredAreKept() }
    func test_aNULInAFreeTextFieldRefusesTheWholeBatch() throws { try contract.aNULInAFreeTextFieldRefusesTheWholeBatch() }
    func test_placementsCommitWithTheirBatchAndGoWithIt() throws { try contract.placementsCommitWithTheirBatchAndGoWithIt() }
    func test_aSessionWithANonFiniteNumberRefusesTheWholeBatch() throws { try contract.aSessionWithANonFiniteNumberRefusesTheWholeBatch() }
    func test_loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection() throws {
        try contract.loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection()
    }
    func test_liveStateTiesAreBrokenByIdentifier() throws { try contract.liveStateTiesAreBrokenByIdentifier() }
    func test_anEndedCallLeavesTheLiveStateButLoadsByItsCID() throws { try contract.anEndedCallLeavesTheLiveStateButLoadsByItsCID() }
    func test_anUnknownCallIsNil() throws { try contract.anUnknownCallIsNil() }
    func test_presenceHoldsEachUsersLiveCallsConnectionsAndDevices() throws { try contract.presenceHoldsEachUsersLiveCallsConnectionsAndDevices() }
    func test_listCallsFiltersByStateTypeMemberAndCreationTime() throws { try contract.listCallsFiltersByStateTypeMemberAndCreationTime() }
    func test_listCallsSeesTheLatestSaveOfACall() throws { try contract.listCallsSeesTheLatestSaveOfACall() }
    func test_listCallsPagesNewestFirstWithoutRepeatsOrGaps() throws { try contract.listCallsPagesNewestFirstWithoutRepeatsOrGaps() }
    func test_theLimitIsClampedToTheOneListRule() throws { try contract.theLimitIsClampedToTheOneListRule() }
    func test_anInvalidCursorIsAnInvalidRequest() throws { try contract.anInvalidCursorIsAnInvalidRequest() }
    func test_cursorsAreURLSafe() throws { try contract.cursorsAreURLSafe() }
    func test_callDetailHoldsOrderedMembersEverySessionAndTheLastEvents() throws {
        try contract.callDetailHoldsOrderedMembersEverySessionAndTheLastEvents()
    }
    func test_eventsKeepTheirAppendOrder() throws { try contract.eventsKeepTheirAppendOrder() }
    func test_callDetailSessionTiesAreBrokenBySessionID() throws { try contract.callDetailSessionTiesAreBrokenBySessionID() }
    func test_lastEventIsTheNewestOfItsType() throws { try contract.lastEventIsTheNewestOfItsType() }
    func test_timesAreKeptToTheNearestMillisecond() throws { try contract.timesAreKeptToTheNearestMillisecond() }
    func test_historyComparesCreationTimesToTheMillisecond() throws { try contract.historyComparesCreationTimesToTheMillisecond() }
    func test_customDataAndPayloadsReadBackAsTheirJSONText() throws { try contract.customDataAndPayloadsReadBackAsTheirJSONText() }
    func test_identifiersCompareByteForByte() throws { try contract.identifiersCompareByteForByte() }
    func test_enqueuedWebhooksArePendingInLaneOrder() throws { try contract.enqueuedWebhooksArePendingInLaneOrder() }
    func test_deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() throws { try contract.deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() }
    func test_listDeliveriesPagesNewestFirstWithFilters() throws { try contract.listDeliveriesPagesNewestFirstWithFilters() }
    func test_endpointStatesUpsertByName() throws { try contract.endpointStatesUpsertByName() }
    func test_devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() throws { try contract.devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() }
    func test_eventSeqRoundTripsWithItsCall() throws { try contract.eventSeqRoundTripsWithItsCall() }
    func test_aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() throws { try contract.aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() }
    func test_webhookTimesAndDataReadBackAsStored() throws { try contract.webhookTimesAndDataReadBackAsStored() }
    func test_pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() throws { try contract.pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() }
}

/// The contract against the SQLite store without its batch log (`store.fold_interval_ms` 0):
/// every batch a transaction on the tables, as before ADR 0010.
final class SQLiteDirectCallStoreContractTests: XCTestCase, CallStoreContractCases {
    private var contract: CallStoreContract {
        CallStoreContract(
            makeStore: { [unowned self] in try SQLiteStore(configuration: StoreConfiguration(directory: try self.temporaryDirectory(), foldInterval: .zero)) },
            placements: { store in
                try Dictionary(uniqueKeysWithValues: (store as! SQLiteStore).allPlacements().map { ($0.callID, CallStoreContract.placed($0)) })
            })
    }

    func test_everyRecordTypeRoundTripsWithAllItsFields() throws { try contract.everyRecordTypeRoundTripsWithAllItsFields() }
    func test_optionalFieldsRoundTripAsNil() throws { try contract.optionalFieldsRoundTripAsNil() }
    func test_savesUpsertInPlaceAndDeleteConnectionRemovesIt() throws { try contract.savesUpsertInPlaceAndDeleteConnectionRemovesIt() }
    func test_aSessionSavedUnderAnotherCallMovesToIt() throws { try contract.aSessionSavedUnderAnotherCallMovesToIt() }
    func test_mutationsApplyInBatchOrder() throws { try contract.mutationsApplyInBatchOrder() }
    func test_aLargeInterleavedBatchLeavesWhatItsLastWritesSay() throws { try contract.aLargeInterleavedBatchLeavesWhatItsLastWritesSay() }
    func test_rowsOfACallThatIsNotStoredAreKept() throws { try contract.rowsOfACallThatIsNotStoredAreKept() }
    func test_aNULInAFreeTextFieldRefusesTheWholeBatch() throws { try contract.aNULInAFreeTextFieldRefusesTheWholeBatch() }
    func test_placementsCommitWithTheirBatchAndGoWithIt() throws { try contract.placementsCommitWithTheirBatchAndGoWithIt() }
    func test_aSessionWithANonFiniteNumberRefusesTheWholeBatch() throws { try contract.aSessionWithANonFiniteNumberRefusesTheWholeBatch() }
    func test_loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection() throws {
        try contract.loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection()
    }
    func test_liveStateTiesAreBrokenByIdentifier() throws { try contract.liveStateTiesAreBrokenByIdentifier() }
    func test_anEndedCallLeavesTheLiveStateButLoadsByItsCID() throws { try contract.anEndedCallLeavesTheLiveStateButLoadsByItsCID() }
    func test_anUnknownCallIsNil() throws { try contract.anUnknownCallIsNil() }
    func test_presenceHoldsEachUsersLiveCallsConnectionsAndDevices() throws { try contract.presenceHoldsEachUsersLiveCallsConnectionsAndDevices() }
    func test_listCallsFiltersByStateTypeMemberAndCreationTime() throws { try contract.listCallsFiltersByStateTypeMemberAndCreationTime() }
    func test_listCallsSeesTheLatestSaveOfACall() throws { try contract.listCallsSeesTheLatestSaveOfACall() }
    func test_listCallsPagesNewestFirstWithoutRepeatsOrGaps() throws { try contract.listCallsPagesNewestFirstWithoutRepeatsOrGaps() }
    func test_theLimitIsClampedToTheOneListRule() throws { try contract.theLimitIsClampedToTheOneListRule() }
    func test_anInvalidCursorIsAnInvalidRequest() throws { try contract.anInvalidCursorIsAnInvalidRequest() }
    func test_cursorsAreURLSafe() throws { try contract.cursorsAreURLSafe() }
    func test_callDetailHoldsOrderedMembersEverySessionAndTheLastEvents() throws {
        try contract.callDetailHoldsOrderedMembersEverySessionAndTheLastEvents()
    }
    func test_eventsKeepTheirAppendOrder() throws { try contract.eventsKeepTheirAppendOrder() }
    func test_callDetailSessionTiesAreBrokenBySessionID() throws { try contract.callDetailSessionTiesAreBrokenBySessionID() }
    func test_lastEventIsTheNewestOfItsType() throws { try contract.lastEventIsTheNewestOfItsType() }
    func test_timesAreKeptToTheNearestMillisecond() throws { try contract.timesAreKeptToTheNearestMillisecond() }
    func test_historyComparesCreationTimesToTheMillisecond() throws { try contract.historyComparesCreationTimesToTheMillisecond() }
    func test_customDataAndPayloadsReadBackAsTheirJSONText() throws { try contract.customDataAndPayloadsReadBackAsTheirJSONText() }
    func test_identifiersCompareByteForByte() throws { try contract.identifiersCompareByteForByte() }
    func test_enqueuedWebhooksArePendingInLaneOrder() throws { try contract.enqueuedWebhooksArePendingInLaneOrder() }
    func test_deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() throws { try contract.deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() }
    func test_listDeliveriesPagesNewestFirstWithFilters() throws { try contract.listDeliveriesPagesNewestFirstWithFilters() }
    func test_endpointStatesUpsertByName() throws { try contract.endpointStatesUpsertByName() }
    func test_devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() throws { try contract.devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() }
    func test_eventSeqRoundTripsWithItsCall() throws { try contract.eventSeqRoundTripsWithItsCall() }
    func test_aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() throws { try contract.aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() }
    func test_webhookTimesAndDataReadBackAsStored() throws { try contract.webhookTimesAndDataReadBackAsStored() }
    func test_pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() throws { try contract.pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() }
}

/// The contract against the in-memory twin the call hub and admin tests use.
final class InMemoryCallStoreContractTests: XCTestCase, CallStoreContractCases {
    private let contract = CallStoreContract(
        makeStore: { InMemoryCallStore() },
        placements: { store in
            Dictionary(uniqueKeysWithValues: (store as! InMemoryCallStore).committedPlacements.map { ($0.key.cid, CallStoreContract.placed($0.value)) })
        })

    func test_everyRecordTypeRoundTripsWithAllItsFields() throws { try contract.everyRecordTypeRoundTripsWithAllItsFields() }
    func test_optionalFieldsRoundTripAsNil() throws { try contract.optionalFieldsRoundTripAsNil() }
    func test_savesUpsertInPlaceAndDeleteConnectionRemovesIt() throws { try contract.savesUpsertInPlaceAndDeleteConnectionRemovesIt() }
    func test_aSessionSavedUnderAnotherCallMovesToIt() throws { try contract.aSessionSavedUnderAnotherCallMovesToIt() }
    func test_mutationsApplyInBatchOrder() throws { try contract.mutationsApplyInBatchOrder() }
    func test_aLargeInterleavedBatchLeavesWhatItsLastWritesSay() throws { try contract.aLargeInterleavedBatchLeavesWhatItsLastWritesSay() }
    func test_rowsOfACallThatIsNotStoredAreKept() throws { try contract.rowsOfACallThatIsNotStoredAreKept() }
    func test_aNULInAFreeTextFieldRefusesTheWholeBatch() throws { try contract.aNULInAFreeTextFieldRefusesTheWholeBatch() }
    func test_placementsCommitWithTheirBatchAndGoWithIt() throws { try contract.placementsCommitWithTheirBatchAndGoWithIt() }
    func test_aSessionWithANonFiniteNumberRefusesTheWholeBatch() throws { try contract.aSessionWithANonFiniteNumberRefusesTheWholeBatch() }
    func test_loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection() throws {
        try contract.loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection()
    }
    func test_liveStateTiesAreBrokenByIdentifier() throws { try contract.liveStateTiesAreBrokenByIdentifier() }
    func test_anEndedCallLeavesTheLiveStateButLoadsByItsCID() throws { try contract.anEndedCallLeavesTheLiveStateButLoadsByItsCID() }
    func test_anUnknownCallIsNil() throws { try contract.anUnknownCallIsNil() }
    func test_presenceHoldsEachUsersLiveCallsConnectionsAndDevices() throws { try contract.presenceHoldsEachUsersLiveCallsConnectionsAndDevices() }
    func test_listCallsFiltersByStateTypeMemberAndCreationTime() throws { try contract.listCallsFiltersByStateTypeMemberAndCreationTime() }
    func test_listCallsSeesTheLatestSaveOfACall() throws { try contract.listCallsSeesTheLatestSaveOfACall() }
    func test_listCallsPagesNewestFirstWithoutRepeatsOrGaps() throws { try contract.listCallsPagesNewestFirstWithoutRepeatsOrGaps() }
    func test_theLimitIsClampedToTheOneListRule() throws { try contract.theLimitIsClampedToTheOneListRule() }
    func test_anInvalidCursorIsAnInvalidRequest() throws { try contract.anInvalidCursorIsAnInvalidRequest() }
    func test_cursorsAreURLSafe() throws { try contract.cursorsAreURLSafe() }
    func test_callDetailHoldsOrderedMembersEverySessionAndTheLastEvents() throws {
        try contract.callDetailHoldsOrderedMembersEverySessionAndTheLastEvents()
    }
    func test_eventsKeepTheirAppendOrder() throws { try contract.eventsKeepTheirAppendOrder() }
    func test_callDetailSessionTiesAreBrokenBySessionID() throws { try contract.callDetailSessionTiesAreBrokenBySessionID() }
    func test_lastEventIsTheNewestOfItsType() throws { try contract.lastEventIsTheNewestOfItsType() }
    func test_timesAreKeptToTheNearestMillisecond() throws { try contract.timesAreKeptToTheNearestMillisecond() }
    func test_historyComparesCreationTimesToTheMillisecond() throws { try contract.historyComparesCreationTimesToTheMillisecond() }
    func test_customDataAndPayloadsReadBackAsTheirJSONText() throws { try contract.customDataAndPayloadsReadBackAsTheirJSONText() }
    func test_identifiersCompareByteForByte() throws { try contract.identifiersCompareByteForByte() }
    func test_enqueuedWebhooksArePendingInLaneOrder() throws { try contract.enqueuedWebhooksArePendingInLaneOrder() }
    func test_deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() throws { try contract.deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() }
    func test_listDeliveriesPagesNewestFirstWithFilters() throws { try contract.listDeliveriesPagesNewestFirstWithFilters() }
    func test_endpointStatesUpsertByName() throws { try contract.endpointStatesUpsertByName() }
    func test_devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() throws { try contract.devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() }
    func test_eventSeqRoundTripsWithItsCall() throws { try contract.eventSeqRoundTripsWithItsCall() }
    func test_aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() throws { try contract.aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() }
    func test_webhookTimesAndDataReadBackAsStored() throws { try contract.webhookTimesAndDataReadBackAsStored() }
    func test_pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() throws { try contract.pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() }
}

/// The contract against the PostgreSQL store (ADR 0012), a new database on the test process's
/// server (``PostgresTestServer``) per check.
final class PostgresCallStoreContractTests: XCTestCase, CallStoreContractCases {
    private let contract = CallStoreContract(
        makeStore: { try PostgresStore(configuration: try PostgresTestServer.running().database()) },
        placements: { store in
            try Dictionary(uniqueKeysWithValues: (store as! PostgresStore).allPlacements().map { ($0.callID, CallStoreContract.placed($0)) })
        })

    func test_everyRecordTypeRoundTripsWithAllItsFields() throws { try contract.everyRecordTypeRoundTripsWithAllItsFields() }
    func test_optionalFieldsRoundTripAsNil() throws { try contract.optionalFieldsRoundTripAsNil() }
    func test_savesUpsertInPlaceAndDeleteConnectionRemovesIt() throws { try contract.savesUpsertInPlaceAndDeleteConnectionRemovesIt() }
    func test_aSessionSavedUnderAnotherCallMovesToIt() throws { try contract.aSessionSavedUnderAnotherCallMovesToIt() }
    func test_mutationsApplyInBatchOrder() throws { try contract.mutationsApplyInBatchOrder() }
    func test_aLargeInterleavedBatchLeavesWhatItsLastWritesSay() throws { try contract.aLargeInterleavedBatchLeavesWhatItsLastWritesSay() }
    func test_rowsOfACallThatIsNotStoredAreKept() throws { try contract.rowsOfACallThatIsNotStoredAreKept() }
    func test_aNULInAFreeTextFieldRefusesTheWholeBatch() throws { try contract.aNULInAFreeTextFieldRefusesTheWholeBatch() }
    func test_placementsCommitWithTheirBatchAndGoWithIt() throws { try contract.placementsCommitWithTheirBatchAndGoWithIt() }
    func test_aSessionWithANonFiniteNumberRefusesTheWholeBatch() throws { try contract.aSessionWithANonFiniteNumberRefusesTheWholeBatch() }
    func test_loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection() throws {
        try contract.loadLiveStateHoldsLiveCallsTheirMembersActiveSessionsAndEveryConnection()
    }
    func test_liveStateTiesAreBrokenByIdentifier() throws { try contract.liveStateTiesAreBrokenByIdentifier() }
    func test_anEndedCallLeavesTheLiveStateButLoadsByItsCID() throws { try contract.anEndedCallLeavesTheLiveStateButLoadsByItsCID() }
    func test_anUnknownCallIsNil() throws { try contract.anUnknownCallIsNil() }
    func test_presenceHoldsEachUsersLiveCallsConnectionsAndDevices() throws { try contract.presenceHoldsEachUsersLiveCallsConnectionsAndDevices() }
    func test_listCallsFiltersByStateTypeMemberAndCreationTime() throws { try contract.listCallsFiltersByStateTypeMemberAndCreationTime() }
    func test_listCallsSeesTheLatestSaveOfACall() throws { try contract.listCallsSeesTheLatestSaveOfACall() }
    func test_listCallsPagesNewestFirstWithoutRepeatsOrGaps() throws { try contract.listCallsPagesNewestFirstWithoutRepeatsOrGaps() }
    func test_theLimitIsClampedToTheOneListRule() throws { try contract.theLimitIsClampedToTheOneListRule() }
    func test_anInvalidCursorIsAnInvalidRequest() throws { try contract.anInvalidCursorIsAnInvalidRequest() }
    func test_cursorsAreURLSafe() throws { try contract.cursorsAreURLSafe() }
    func test_callDetailHoldsOrderedMembersEverySessionAndTheLastEvents() throws {
        try contract.callDetailHoldsOrderedMembersEverySessionAndTheLastEvents()
    }
    func test_eventsKeepTheirAppendOrder() throws { try contract.eventsKeepTheirAppendOrder() }
    func test_callDetailSessionTiesAreBrokenBySessionID() throws { try contract.callDetailSessionTiesAreBrokenBySessionID() }
    func test_lastEventIsTheNewestOfItsType() throws { try contract.lastEventIsTheNewestOfItsType() }
    func test_timesAreKeptToTheNearestMillisecond() throws { try contract.timesAreKeptToTheNearestMillisecond() }
    func test_historyComparesCreationTimesToTheMillisecond() throws { try contract.historyComparesCreationTimesToTheMillisecond() }
    func test_customDataAndPayloadsReadBackAsTheirJSONText() throws { try contract.customDataAndPayloadsReadBackAsTheirJSONText() }
    func test_identifiersCompareByteForByte() throws { try contract.identifiersCompareByteForByte() }
    func test_enqueuedWebhooksArePendingInLaneOrder() throws { try contract.enqueuedWebhooksArePendingInLaneOrder() }
    func test_deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() throws { try contract.deliveryUpdatesReplaceTheRowAndDeliveredOrDeadLeavePending() }
    func test_listDeliveriesPagesNewestFirstWithFilters() throws { try contract.listDeliveriesPagesNewestFirstWithFilters() }
    func test_endpointStatesUpsertByName() throws { try contract.endpointStatesUpsertByName() }
    func test_devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() throws { try contract.devicesAreKeptPerUserOldestFirstAndATokenHasOneOwner() }
    func test_eventSeqRoundTripsWithItsCall() throws { try contract.eventSeqRoundTripsWithItsCall() }
    func test_aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() throws { try contract.aNULInAWebhookOrDeviceFieldRefusesTheWholeBatch() }
    func test_webhookTimesAndDataReadBackAsStored() throws { try contract.webhookTimesAndDataReadBackAsStored() }
    func test_pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() throws { try contract.pruningRemovesOldFinishedDeliveriesAndTheirMessagesOnly() }
}
