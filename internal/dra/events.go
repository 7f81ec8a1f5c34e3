package dra

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReasonClaimStatusNotWritten is the reason of the Warning Event on a prepared claim
// whose status.devices the API server did not take.
const ReasonClaimStatusNotWritten = "ClaimStatusNotWritten"

// maxNote is the longest note events.k8s.io/v1 takes.
const maxNote = 1024

// statusNotWritten makes a failed status write visible: a log line, the metric, and a
// Warning Event on the claim with the API server's error. The claim stays prepared.
func (d *Driver) statusNotWritten(ctx context.Context, c preparedClaim, err error) {
	d.metrics.statusNotWritten.Inc()
	d.log.Error(err, "Claim status not written (the claim is prepared)", "claim", c.Namespace+"/"+c.Name)
	ev := claimEvent(c, d.opts.NodeName, time.Now(), ReasonClaimStatusNotWritten,
		"status.devices not written (the claim is prepared; the pod does not see the chosen GID in the claim): "+err.Error())
	if _, err := d.opts.Client.EventsV1().Events(c.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		d.log.Error(err, "Event not recorded", "claim", c.Namespace+"/"+c.Name, "reason", ReasonClaimStatusNotWritten)
	}
}

// claimEvent is a Warning Event about claim c from the driver on node.
func claimEvent(c preparedClaim, node string, now time.Time, reason, note string) *eventsv1.Event {
	if len(note) > maxNote {
		note = note[:maxNote-3] + "..."
	}
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", c.Name, now.UnixNano()), Namespace: c.Namespace},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: DriverName,
		ReportingInstance:   DriverName + "-" + node,
		Action:              "PrepareResourceClaim",
		Reason:              reason,
		Type:                corev1.EventTypeWarning,
		Note:                note,
		Regarding: corev1.ObjectReference{APIVersion: resourceapi.SchemeGroupVersion.String(), Kind: "ResourceClaim",
			Namespace: c.Namespace, Name: c.Name, UID: c.UID},
	}
}
