package v1alpha1

// Reasons of a RingCapture's conditions (CamelCase; the operator also uses them as event
// reasons). The comment of each group names the conditions that carry it.
const (
	// Scheduled, and Ready while the pod is not scheduled.
	ReasonPodNotCreated   = "PodNotCreated"
	ReasonPodNameConflict = "PodNameConflict"
	ReasonPodDeleting     = "PodDeleting"
	// ReasonPodRefused: the API server refused to create the capture pod (admission:
	// a missing PriorityClass, Pod Security, a ResourceQuota; or validation); the
	// message is the API server's. Or the operator did not create it: a reader's
	// volumeMounts entry names no volume of spec.volumes, or covers /dev or
	// /etc/ringcap; the message says which. The operator tries again with back-off.
	ReasonPodRefused    = "PodRefused"
	ReasonPodPending    = "PodPending"
	ReasonUnschedulable = "Unschedulable"
	ReasonScheduled     = "Scheduled"
	// The receiver's device through a DRA claim (receiver.deviceClassName or
	// receiver.resourceClaimTemplateName).
	ReasonClaimTemplateConflict = "ClaimTemplateConflict"
	ReasonClaimTemplateRefused  = "ClaimTemplateRefused"
	ReasonClaimTemplateNotFound = "ClaimTemplateNotFound"
	ReasonClaimPending          = "ClaimPending"
	ReasonClaimNotAllocatable   = "ClaimNotAllocatable"

	// RingReady and ReceiverReady.
	ReasonRingCreated      = "RingCreated"
	ReasonRingNotReady     = "RingNotReady"
	ReasonNoReceiverStatus = "NoReceiverStatus"
	ReasonCaptureFailed    = "CaptureFailed"
	ReasonCaptureEnded     = "CaptureEnded"
	// ReasonListening: ReceiverReady is True with the receiver's state as reason,
	// Listening or Receiving.
	ReasonListening        = "Listening"
	ReasonReceiverNotReady = "ReceiverNotReady"

	// Receiving.
	ReasonReceiving        = "Receiving"
	ReasonReceiverFinished = "ReceiverFinished"
	ReasonNotReceiving     = "NotReceiving"

	// ReadersBehind.
	ReasonReadersBehind    = "ReadersBehind"
	ReasonReadersKeepingUp = "ReadersKeepingUp"

	// Failed.
	ReasonReceiverFailed = "ReceiverFailed"
	ReasonReaderFailed   = "ReaderFailed"
	// ReasonStartDeadlineExceeded: the receiver did not listen within
	// spec.startDeadlineSeconds of the pod's scheduling.
	ReasonStartDeadlineExceeded = "StartDeadlineExceeded"
	// ReasonRunInterrupted: the pod was deleted, evicted or lost with its node after
	// it accepted data (Failed with interruptionPolicy Fail; also status.lastRun's
	// reason and a Warning event).
	ReasonRunInterrupted = "RunInterrupted"
	// ReasonReaderExited: a reader with restartPolicy FailCapture exited (code 0) while
	// the capture runs, leaving its ring slot empty.
	ReasonReaderExited = "ReaderExited"
	ReasonPodFailed    = "PodFailed"
	ReasonNotFailed    = "NotFailed"

	// Ready (besides the Scheduled reasons while the pod is not scheduled).
	ReasonReceiverReady    = "ReceiverReady"
	ReasonContainerWaiting = "ContainerWaiting"
	// ReasonNodeNotReady: the pod's node stopped reporting (the node lifecycle
	// controller marked the pod not ready); the receiver's last numbers may be stale.
	ReasonNodeNotReady = "NodeNotReady"
	// ReasonReceiverUnreachable (ReceiverReady Unknown, and Ready): /status has not
	// answered for several poll intervals; the numbers shown are the last it gave.
	ReasonReceiverUnreachable = "ReceiverUnreachable"
	ReasonReadersDraining     = "ReadersDraining"
	// ReasonReaderSlotEmpty: a reader with restartPolicy Restart exited while the capture
	// runs and has not been restarted yet; its ring slot is empty.
	ReasonReaderSlotEmpty = "ReaderSlotEmpty"
	ReasonSucceeded       = "Succeeded"
	ReasonFailed          = "Failed" // also Receiving while the capture has failed

	// ChangePending.
	ReasonSpecChangePending = "SpecChangePending"
	ReasonNoChangePending   = "NoChangePending"
)

// Reasons of events only.
const (
	ReasonPodCreated      = "PodCreated"
	ReasonPodReplaced     = "PodReplaced"
	ReasonPodCreateFailed = "PodCreateFailed"
	ReasonPodStopped      = "PodStopped"
)
