package informer

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/informerdb/informerdb/reflector"
	"github.com/informerdb/informerdb/store"
)

// Metric names. Every metric has the label "informer" (Options.Name);
// informerdb_relists_total also has "reason" (one of reflector.Reasons).
const (
	MetricResumes          = "informerdb_resumes_total"
	MetricRelists          = "informerdb_relists_total"
	MetricListRequests     = "informerdb_list_requests_total"
	MetricWatchRequests    = "informerdb_watch_requests_total"
	MetricWatchEvents      = "informerdb_watch_events_total"
	MetricBookmarks        = "informerdb_bookmarks_total"
	MetricDroppedEvents    = "informerdb_dropped_events_total"
	MetricRejectedChanges  = "informerdb_rejected_changes_total"
	MetricDeltasApplied    = "informerdb_deltas_applied_total"
	MetricDeltasPending    = "informerdb_deltas_pending"
	MetricQueueLength      = "informerdb_queue_length"
	MetricCommitFailures   = "informerdb_commit_failures_total"
	MetricCommitFailing    = "informerdb_commit_failing_seconds"
	MetricCommitDuration   = "informerdb_commit_duration_seconds"
	MetricCommitObjects    = "informerdb_commit_objects"
	MetricStoreObjects     = "informerdb_store_objects"
	MetricStoreBytes       = "informerdb_store_bytes"
	MetricHandlerQueue     = "informerdb_handler_queue_depth"
	MetricHandlerLag       = "informerdb_handler_lag_seconds"
	MetricResumePointAge   = "informerdb_resume_point_age_seconds"
	MetricSynced           = "informerdb_synced"
	MetricStoreReadErrors  = "informerdb_store_read_errors_total"
	labelInformer          = "informer"
	labelReason            = "reason"
	commitDurationHelpText = "Time a store commit of the informer took (objects, index entries and resume point in one transaction)."
)

var (
	descResumes = prometheus.NewDesc(MetricResumes,
		"Starts that resumed the watch from the persisted resourceVersion instead of listing.", []string{labelInformer}, nil)
	descRelists = prometheus.NewDesc(MetricRelists,
		"Relists, each counted once when its list is handed to the queue, by reason: cold (empty store), expired (410 from the server), too-large (resume point newer than the server knows), time-travel (server older than the resume point), catch-up (resume did not catch up in time), scope-change (store emptied at open: another scope, or a key function that computes other keys), corrupt (damaged database deleted), gone (resource not served: the store emptied, no list).",
		[]string{labelInformer, labelReason}, nil)
	descListRequests = prometheus.NewDesc(MetricListRequests,
		"LIST requests made (freshness probes, catch-up LISTs of one object, and every page).", []string{labelInformer}, nil)
	descWatchRequests = prometheus.NewDesc(MetricWatchRequests,
		"WATCH requests made, streaming lists included.", []string{labelInformer}, nil)
	descWatchEvents = prometheus.NewDesc(MetricWatchEvents,
		"ADDED, MODIFIED and DELETED watch events received and queued.", []string{labelInformer}, nil)
	descBookmarks = prometheus.NewDesc(MetricBookmarks,
		"BOOKMARK watch events received and queued.", []string{labelInformer}, nil)
	descDroppedEvents = prometheus.NewDesc(MetricDroppedEvents,
		"ADDED, MODIFIED and DELETED watch events dropped: refused by the queue (a key-function or transform error) or unusable (wrong type); each was reported to the watch error handler, and none is seen again after a restart.", []string{labelInformer}, nil)
	descRejectedChanges = prometheus.NewDesc(MetricRejectedChanges,
		"Changes the store refused as invalid (an object its codec or an index function refuses, one too large for the backend) and the informer left out of their commits, logging each: the key keeps the last state the store accepted until a change or a relist brings one it accepts.", []string{labelInformer}, nil)
	descDeltasApplied = prometheus.NewDesc(MetricDeltasApplied,
		"Deltas applied to the store and notified: listed objects, watch events and bookmarks.", []string{labelInformer}, nil)
	descDeltasPending = prometheus.NewDesc(MetricDeltasPending,
		"Deltas taken from the queue and not yet applied: gathered into the next group commit, or in a commit that failed and is retried.", []string{labelInformer}, nil)
	descQueueLength = prometheus.NewDesc(MetricQueueLength,
		"Entries in the informer's queue not yet taken for a commit (keys with deltas, bookmarks, relists); it grows while the store commits slower than the watch delivers.", []string{labelInformer}, nil)
	descCommitFailures = prometheus.NewDesc(MetricCommitFailures,
		"Store commits that failed and were retried with backoff (a full disk, an I/O error); while they fail, handlers hear of nothing new and the resume point stays.", []string{labelInformer}, nil)
	descCommitFailing = prometheus.NewDesc(MetricCommitFailing,
		"Seconds the commit being retried has been failing, 0 while commits succeed; a failure that lasts needs a restart of the process (Informer.CheckCommits).", []string{labelInformer}, nil)
	descStoreObjects = prometheus.NewDesc(MetricStoreObjects,
		"Objects in the informer's store.", []string{labelInformer}, nil)
	descStoreBytes = prometheus.NewDesc(MetricStoreBytes,
		"Bytes the store's database takes on disk, for backends that can tell cheaply (store.DiskSizer).", []string{labelInformer}, nil)
	descHandlerQueue = prometheus.NewDesc(MetricHandlerQueue,
		"Notifications the informer's handlers have not finished (queued or running), summed over handlers.", []string{labelInformer}, nil)
	descHandlerLag = prometheus.NewDesc(MetricHandlerLag,
		"Age of the oldest notification a handler of the informer has not finished; 0 when there is none.", []string{labelInformer}, nil)
	descResumePointAge = prometheus.NewDesc(MetricResumePointAge,
		"Seconds since the committed resume point (resourceVersion) last advanced, or since the informer started if it has not; servers send a bookmark about every minute, so a value well above that means the informer is stuck.",
		[]string{labelInformer}, nil)
	descStoreReadErrors = prometheus.NewDesc(MetricStoreReadErrors,
		"Reads of the informer's store that failed where cache.Indexer cannot return an error (List, ListKeys, ListIndexFuncValues of a bounded-mode store: a damaged record); each returned nothing and was logged, and Informer.CheckCommits fails from the first.", []string{labelInformer}, nil)
	descSynced = prometheus.NewDesc(MetricSynced,
		"1 once the informer has synced (HasSynced), else 0.", []string{labelInformer}, nil)
)

// Metrics exports the Prometheus metrics of informers (listed in the
// README): many informers share one Metrics (Options.Metrics), each under
// its own "informer" label (Options.Name). Counters and gauges are read at
// scrape time; commit histograms are observed as commits happen. An
// informer appears from New until it ends (see Informer.IsStopped). A
// Metrics is safe for concurrent use.
type Metrics struct {
	commitDuration *prometheus.HistogramVec
	commitObjects  *prometheus.HistogramVec

	mu        sync.Mutex // guards informers
	informers map[string]*Informer
}

// NewMetrics returns Metrics registered on reg. Nothing is registered on
// Prometheus' global registry unless reg is prometheus.DefaultRegisterer.
// Registering twice on one registry fails (the metric names are taken).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("informer: new metrics: nil prometheus.Registerer (pass a registry; nothing is registered globally by default)")
	}
	m := &Metrics{
		commitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricCommitDuration,
			Help:    commitDurationHelpText,
			Buckets: prometheus.ExponentialBucketsRange(0.0001, 10, 16),
		}, []string{labelInformer}),
		commitObjects: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricCommitObjects,
			Help:    "Objects written (puts and deletes) per store commit.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 50000},
		}, []string{labelInformer}),
		informers: map[string]*Informer{},
	}
	for _, c := range []prometheus.Collector{m.commitDuration, m.commitObjects, collector{m}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("informer: new metrics: %w", err)
		}
	}
	return m, nil
}

// errDuplicateName is wrapped when two informers share a Metrics and a name.
var errDuplicateName = errors.New("another informer with this name reports to the same Metrics")

// add makes inf report under name.
func (m *Metrics) add(name string, inf *Informer) (*informerMetrics, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.informers[name]; dup {
		return nil, fmt.Errorf("informer: new %s: metrics: %w (set Options.Name)", name, errDuplicateName)
	}
	m.informers[name] = inf
	return &informerMetrics{
		m:              m,
		name:           name,
		commitDuration: m.commitDuration.WithLabelValues(name),
		commitObjects:  m.commitObjects.WithLabelValues(name),
	}, nil
}

// remove drops inf's metrics, if inf still reports under name.
func (m *Metrics) remove(name string, inf *Informer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.informers[name] != inf {
		return
	}
	delete(m.informers, name)
	m.commitDuration.DeleteLabelValues(name)
	m.commitObjects.DeleteLabelValues(name)
}

// informerMetrics is one informer's handle on its Metrics; nil when the
// informer has none. It is safe for concurrent use.
type informerMetrics struct {
	m                             *Metrics
	name                          string
	commitDuration, commitObjects prometheus.Observer
}

// observeCommit records one store commit of ops operations.
func (im *informerMetrics) observeCommit(d time.Duration, ops int) {
	if im == nil {
		return
	}
	im.commitDuration.Observe(d.Seconds())
	im.commitObjects.Observe(float64(ops))
}

// collector reads the informers' counters and gauges at scrape time.
type collector struct{ m *Metrics }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descResumes, descRelists, descListRequests, descWatchRequests, descWatchEvents,
		descBookmarks, descDroppedEvents, descRejectedChanges, descDeltasApplied, descDeltasPending, descQueueLength, descCommitFailures, descCommitFailing, descStoreObjects, descStoreBytes, descHandlerQueue, descHandlerLag,
		descResumePointAge, descSynced, descStoreReadErrors} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	infs := maps.Clone(c.m.informers)
	c.m.mu.Unlock()
	for name, inf := range infs {
		inf.collect(name, ch)
	}
}

// collect sends inf's scrape-time metrics.
func (inf *Informer) collect(name string, ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{name}, labels...)...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
	}
	age := func(t time.Time) float64 { // 0 for the zero time
		if t.IsZero() {
			return 0
		}
		return max(inf.opts.Clock.Since(t).Seconds(), 0)
	}
	st := inf.Stats()
	r := st.Reflector
	counter(descResumes, r.Resumes)
	byReason := r.Relists.ByReason()
	for _, reason := range reflector.Reasons {
		counter(descRelists, byReason[reason], reason)
	}
	counter(descListRequests, r.Lists)
	counter(descWatchRequests, r.Watches+r.WatchLists)
	counter(descWatchEvents, r.Events)
	counter(descBookmarks, r.Bookmarks)
	counter(descDroppedEvents, r.Dropped)
	counter(descRejectedChanges, st.Rejected)
	counter(descStoreReadErrors, st.ReadErrors)
	counter(descDeltasApplied, st.Deltas)
	counter(descCommitFailures, st.CommitFailures)
	gauge(descCommitFailing, age(st.CommitFailingSince))
	gauge(descDeltasPending, float64(st.PendingDeltas))
	gauge(descQueueLength, float64(st.Queued))

	if l, ok := inf.store.(store.Lener); ok {
		gauge(descStoreObjects, float64(l.Len()))
	} else {
		gauge(descStoreObjects, float64(len(inf.store.ListKeys())))
	}
	if ds, ok := inf.store.(store.DiskSizer); ok {
		if b, err := ds.DiskSize(); err == nil {
			gauge(descStoreBytes, float64(b))
		}
	}
	depth, oldest := inf.proc.queue()
	gauge(descHandlerQueue, float64(depth))
	gauge(descHandlerLag, age(oldest))
	if at := inf.rvAdvanced.Load(); at != 0 {
		gauge(descResumePointAge, age(time.Unix(0, at)))
	}
	synced := 0.0
	if inf.HasSynced() {
		synced = 1
	}
	gauge(descSynced, synced)
}
