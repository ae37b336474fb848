package main

import (
	"context"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// maxEvents is how many Events "why" shows: the last few scheduling cycles' verdicts, short
// enough to read without scrolling.
const maxEvents = 10

// objectEvent is one Event on a pod or a PodGroup.
type objectEvent struct {
	// object is kind/name, as kubectl names it: pod/NAME or podgroup/NAME.
	object            string
	eventType, reason string
	message           string
	count             int32
	last              time.Time
}

// involved is the object whose Events are wanted.
type involved struct {
	kind, namespace, name string
	uid                   types.UID
	// word is how kubectl names the kind ("pod", "podgroup").
	word string
}

// eventsAbout lists the Events of obj that keep accepts (nil keeps all). The field selector
// narrows the list on the API server; the UID keeps out the Events of an earlier object of
// the same name, which the API server keeps for an hour.
func eventsAbout(ctx context.Context, client kubernetes.Interface, obj involved, keep func(*corev1.Event) bool) ([]objectEvent, error) {
	selector := fields.Set{"involvedObject.kind": obj.kind, "involvedObject.name": obj.name}.AsSelector().String()
	list, err := client.CoreV1().Events(obj.namespace).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return nil, explain(err, "list", "events", obj.namespace)
	}
	var events []objectEvent
	for i := range list.Items {
		e := &list.Items[i]
		ref := e.InvolvedObject
		if ref.Kind != obj.kind || ref.Name != obj.name || (ref.UID != "" && ref.UID != obj.uid) {
			continue
		}
		if keep != nil && !keep(e) {
			continue
		}
		events = append(events, objectEvent{object: obj.word + "/" + obj.name, eventType: e.Type, reason: e.Reason,
			message: e.Message, count: e.Count, last: lastSeen(e)})
	}
	return events, nil
}

// lastSeen is when the Event last happened: its lastTimestamp, else (events.k8s.io writers)
// its eventTime, else when it was first seen or created.
func lastSeen(e *corev1.Event) time.Time {
	for _, t := range []time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return e.CreationTimestamp.Time
}

// newestLast sorts events oldest first and keeps the last maxEvents.
func newestLast(events []objectEvent) []objectEvent {
	sort.SliceStable(events, func(i, j int) bool { return events[i].last.Before(events[j].last) })
	return events[max(0, len(events)-maxEvents):]
}
