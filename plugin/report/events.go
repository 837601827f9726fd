package report

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// events are the Events of the cluster and of the objects it owns that the report knows
// (its pods, StatefulSets and claims, by uid), oldest first. The API server keeps them for an
// hour by default: older ones are gone.
func events(ctx context.Context, core kubernetes.Interface, namespace string, clusterUID types.UID, owned map[types.UID]bool) ([]byte, error) {
	list, err := core.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var keep []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.UID == clusterUID || owned[e.InvolvedObject.UID] {
			keep = append(keep, e)
		}
	}
	slices.SortStableFunc(keep, func(a, b corev1.Event) int { return eventTime(a).Compare(eventTime(b)) })
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "LAST SEEN\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for _, e := range keep {
		count := max(e.Count, 1)
		if e.Series != nil {
			count = max(count, e.Series.Count)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s/%s\t%d\t%s\n", eventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason,
			strings.ToLower(e.InvolvedObject.Kind), e.InvolvedObject.Name, count, strings.ReplaceAll(e.Message, "\n", " "))
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if len(keep) == 0 {
		return []byte("No Events of the cluster or its pods (the API server keeps them for an hour by default).\n"), nil
	}
	return b.Bytes(), nil
}

// eventTime is when an Event last happened, whichever API wrote it.
func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
