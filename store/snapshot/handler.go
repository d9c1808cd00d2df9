package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/informerdb/informerdb/store"
)

// ContentType is the media type of the snapshots a Handler serves.
const ContentType = "application/vnd.informerdb.snapshot"

// ErrorTrailer is the HTTP trailer in which a Handler says why a snapshot
// stream it had started ended early. Such a stream also lacks the
// format's checksum trailer, so a client that ignores HTTP trailers still
// finds it truncated.
const ErrorTrailer = "Informerdb-Error"

// errorWriteTime bounds the writing of an error answer.
const errorWriteTime = 10 * time.Second

// DefaultHandlerTimeout is how long a request to a Handler may take unless
// HandlerOptions.Timeout says otherwise.
const DefaultHandlerTimeout = 10 * time.Minute

// HandlerOptions tune NewHandler. The zero value is fine. NewHandler only
// reads them.
type HandlerOptions struct {
	// Timeout bounds each request, and so how long a snapshot keeps its
	// view of the database (see Caveats in the package documentation).
	// 0 means DefaultHandlerTimeout. A shorter server WriteTimeout ends
	// large snapshots first.
	Timeout time.Duration
}

// NewHandler returns an http.Handler that serves, read-only, the database
// at rawURL as stores of this process have it open: rawURL is the URL the
// process opened them with (informer.NewFactory's or
// informer.NewInformerConstructor's; only its path counts). Mount it on the
// mux of the process's metrics or pprof server, behind the same
// authentication, under a prefix of your choice:
//
//	h, err := snapshot.NewHandler(dbURL, nil)
//	...
//	mux.Handle("/debug/informerdb/", h)
//
// It answers GET and HEAD (other methods get 405) on two paths, whichever
// prefix they are mounted under:
//
//   - <prefix>/snapshot streams a snapshot of every store (or of those
//     named by store= query parameters) in the format of Save, with
//     Content-Type ContentType, from one view of the whole database (see
//     store.RawLiveViewer). A stream that fails after it started ends
//     without the format's checksum and with the cause in the
//     ErrorTrailer trailer. Fetch saves one to a file.
//   - <prefix>/status answers JSON: the Manifest Status computes, from one
//     view, with an "unreadable" list of the stores this build cannot
//     read. FetchStatus reads it.
//
// Failures are JSON objects {"error": message, "reason": kind}, with 503
// while no store of the process has the database open, 404 for an unknown
// path or store, 400 for unknown query parameters. It has no write path.
//
// The snapshot holds every object of the cache, Secrets included: mount
// the handler only behind authentication and authorization (as pprof).
//
// NewHandler refuses with store.ErrInvalid a URL no registered backend
// serves, or whose backend cannot serve a live view (memory:// without a
// file). The handler is safe for concurrent use; each request reads its
// own view. o may be nil.
func NewHandler(rawURL string, o *HandlerOptions) (http.Handler, error) {
	h := &handler{rawURL: rawURL, source: redact(rawURL), timeout: DefaultHandlerTimeout}
	if o != nil {
		if o.Timeout < 0 {
			return nil, fmt.Errorf("snapshot: new handler for %s: negative timeout %v: %w", h.source, o.Timeout, store.ErrInvalid)
		}
		if o.Timeout > 0 {
			h.timeout = o.Timeout
		}
	}
	// A view that finds no store open is what a handler mounted before
	// the informers start sees; any other failure is the URL's.
	err := store.LiveView(context.Background(), rawURL, func(store.RawView) error { return nil })
	if err != nil && !errors.Is(err, store.ErrClosed) {
		return nil, fmt.Errorf("snapshot: new handler for %s: %w", h.source, err)
	}
	return h, nil
}

// handler is NewHandler's. Its fields are set once.
type handler struct {
	rawURL  string
	source  string // rawURL, redacted
	timeout time.Duration
}

// httpError is the JSON body of a failure, and an unreadable store of a
// status. Reason names the sentinel error it wraps, if any (see reasons).
type httpError struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
}

// reasons name the sentinel errors a client can tell apart.
var reasons = []struct {
	name string
	err  error
}{
	{"closed", store.ErrClosed},
	{"notFound", store.ErrNotFound},
	{"corrupt", store.ErrCorrupt},
	{"incompatible", store.ErrIncompatible},
	{"locked", store.ErrLocked},
	{"inUse", store.ErrInUse},
	{"invalid", store.ErrInvalid},
}

func errorOf(err error) httpError {
	e := httpError{Error: err.Error()}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			e.Reason = r.name
			break
		}
	}
	return e
}

// statusResponse is the JSON a status request answers; Unreadable are the
// stores this build cannot read (see Status).
type statusResponse struct {
	*Manifest
	Unreadable []httpError `json:"unreadable,omitempty"`
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.fail(w, http.StatusMethodNotAllowed, fmt.Errorf("snapshot: %s %s: the handler is read-only: GET or HEAD only", r.Method, r.URL.Path))
		return
	}
	switch path.Base(r.URL.Path) {
	case "snapshot":
		h.snapshot(w, r)
	case "status":
		h.status(w, r)
	default:
		h.fail(w, http.StatusNotFound, fmt.Errorf("snapshot: %s: no such endpoint; GET <prefix>/snapshot or <prefix>/status: %w", r.URL.Path, store.ErrNotFound))
	}
}

// fail answers err as JSON with code.
func (h *handler) fail(w http.ResponseWriter, code int, err error) {
	hdr := w.Header()
	for _, k := range []string{"Trailer", "Content-Disposition", "Content-Length"} {
		hdr.Del(k)
	}
	setContentType(w, "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(errorOf(err))
}

// failView answers the error of a view that wrote nothing.
func (h *handler) failView(w http.ResponseWriter, err error) {
	// The request's write deadline may have passed (the view's did): the
	// small answer gets a moment of its own.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(errorWriteTime))
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrClosed):
		code = http.StatusServiceUnavailable
	case errors.Is(err, store.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, context.DeadlineExceeded):
		code = http.StatusServiceUnavailable
	}
	h.fail(w, code, err)
}

// query returns the values of r's query parameters, refusing those not in
// allowed.
func query(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %s: query: %w: %w", r.URL.Path, store.ErrInvalid, err)
	}
	for k := range q {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("snapshot: %s: unknown query parameter %q (want %q): %w", r.URL.Path, k, allowed, store.ErrInvalid)
		}
	}
	return q, nil
}

// deadline bounds r by h.timeout: its context, and the writes of its
// response where the ResponseWriter supports deadlines (elsewhere the
// context still ends the view, at the next record), so that a client that
// stops reading cannot keep a view open.
func (h *handler) deadline(w http.ResponseWriter, r *http.Request) (context.Context, context.CancelFunc) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.timeout))
	return context.WithTimeout(r.Context(), h.timeout)
}

func (h *handler) snapshot(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "store")
	if err != nil {
		h.fail(w, http.StatusBadRequest, err)
		return
	}
	want := q["store"]
	ctx, cancel := h.deadline(w, r)
	defer cancel()
	out := &sentWriter{w: w}
	err = store.LiveView(ctx, h.rawURL, func(v store.RawView) error {
		entries, err := v.ListStores(ctx)
		if err != nil {
			return err
		}
		names, err := pick(entries, want, "snapshot", h.source, "save the other stores with store= parameters")
		if err != nil {
			return err
		}
		names = slices.Compact(names) // store=a&store=a
		setContentType(w, ContentType)
		w.Header().Set("Content-Disposition", `attachment; filename="informerdb.snap"`)
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusOK)
			return nil
		}
		w.Header().Set("Trailer", ErrorTrailer)
		_, _, err = write(ctx, out, h.source, time.Now().UTC(), sourcesOf(names, v.Export), nil)
		return err
	})
	if err == nil {
		return
	}
	if !out.sent {
		h.failView(w, err)
		return
	}
	// The status line went out: the stream ends without its checksum,
	// and the trailer says why.
	w.Header().Set(ErrorTrailer, headerSafe(err.Error()))
}

// pick returns the names, sorted, of the stores of entries to save: want,
// or every store that is not gone. A store to save that this build cannot
// read fails it, with hint saying how to save the others. op starts the
// errors, source names the database in them.
func pick(entries []store.StoreEntry, want []string, op, source, hint string) ([]string, error) {
	var names []string
	for _, e := range entries {
		if !e.Gone() {
			names = append(names, e.Info.Name)
		}
	}
	if len(want) > 0 {
		for _, n := range want {
			if !slices.Contains(names, n) {
				return nil, fmt.Errorf("%s: no store %q in %s (it has %q): %w", op, n, source, names, store.ErrNotFound)
			}
		}
		names = slices.Clone(want)
	}
	slices.Sort(names)
	for _, e := range entries {
		if e.Err != nil && slices.Contains(names, e.Info.Name) {
			return nil, fmt.Errorf("%s: %w (%s)", op, e.Err, hint)
		}
	}
	return names, nil
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	if _, err := query(r); err != nil {
		h.fail(w, http.StatusBadRequest, err)
		return
	}
	ctx, cancel := h.deadline(w, r)
	defer cancel()
	resp := statusResponse{Manifest: &Manifest{Source: h.source}}
	err := store.LiveView(ctx, h.rawURL, func(v store.RawView) error {
		if r.Method == http.MethodHead {
			return nil
		}
		entries, err := v.ListStores(ctx)
		if err != nil {
			return err
		}
		infos, unreadable := readable(entries)
		for _, uerr := range unreadable {
			resp.Unreadable = append(resp.Unreadable, errorOf(uerr))
		}
		return hashStores(ctx, v.Export, infos, "status", nil, nil, func(info store.Info, h *hasher) error {
			resp.Stores = append(resp.Stores, h.header(info))
			return nil
		})
	})
	if err != nil {
		h.failView(w, err)
		return
	}
	resp.Size = diskSize(h.rawURL)
	setContentType(w, "application/json")
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(resp)
}

// setContentType sets the Content-Type of every answer, and the headers
// that keep caches and browsers from keeping or sniffing it.
func setContentType(w http.ResponseWriter, ctype string) {
	hdr := w.Header()
	hdr.Set("Content-Type", ctype)
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
}

// sentWriter records whether anything was written through it.
type sentWriter struct {
	w    io.Writer
	sent bool
}

func (s *sentWriter) Write(b []byte) (int, error) {
	s.sent = true
	return s.w.Write(b)
}

// headerSafe makes s a valid header value: no control characters.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
