package reflector

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrInvalid is wrapped by the errors New returns for bad arguments.
var ErrInvalid = errors.New("invalid argument")

// errCatchUpDeadline ends a watch when Options.CatchUpDeadline has passed.
var errCatchUpDeadline = errors.New("sync target not reached by the catch-up deadline")

// errNoWatch is a ListerWatcher bug, reported rather than dereferenced.
var errNoWatch = errors.New("ListerWatcher returned neither a watch nor an error")

// errNoList is a ListerWatcher bug, reported rather than dereferenced.
var errNoList = errors.New("ListerWatcher returned neither a list nor an error")

// errNoStatus: an Error watch event without the status that says what failed.
var errNoStatus = errors.New("error event without a status")

// errStreamEndedEarly: a server that ignores sendInitialEvents (before
// Kubernetes 1.27) answers with a plain watch, which ends at its timeout
// without the initial-events-end bookmark.
var errStreamEndedEarly = errors.New("stream closed before the initial-events-end bookmark")

// watchListUnsupported reports the streaming-list failures that a paginated
// LIST may not share: the server rejects or ignores the request.
func watchListUnsupported(err error) bool {
	return errors.Is(err, errStreamEndedEarly) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) ||
		apierrors.IsUnsupportedMediaType(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err)
}

// isExpired reports the errors that mean "this resourceVersion is gone":
// 410 Expired, and 410 Gone from servers before 1.18.
func isExpired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// isTooLargeResourceVersion reports the error a server gives for a
// resourceVersion newer than it knows: a status cause since 1.18, only the
// message before.
func isTooLargeResourceVersion(err error) bool {
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || !apierrors.IsTimeout(err) {
		return false
	}
	s := st.Status()
	if strings.Contains(s.Message, "Too large resource version") {
		return true
	}
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return false
}
