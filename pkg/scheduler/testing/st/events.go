package st

import (
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// EventLog is a record.EventRecorder that keeps each Event it is given as one line:
// "Kind namespace/name Type Reason: message". It is safe for concurrent use.
type EventLog struct {
	mu     sync.Mutex
	events []string
}

// Event records one Event.
func (l *EventLog) Event(obj runtime.Object, eventType, reason, message string) {
	on := fmt.Sprintf("%T", obj)
	if m, ok := obj.(metav1.Object); ok {
		on = strings.TrimPrefix(on[strings.LastIndex(on, ".")+1:], "*") + " " + m.GetNamespace() + "/" + m.GetName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, on+" "+eventType+" "+reason+": "+message)
}

// Eventf records one Event.
func (l *EventLog) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	l.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// AnnotatedEventf records one Event; the annotations are dropped.
func (l *EventLog) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	l.Eventf(obj, eventType, reason, format, args...)
}

// Take returns the Events recorded since the last Take.
func (l *EventLog) Take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}
